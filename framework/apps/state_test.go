package apps

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/builder"
)

const ns = "ns"

func controller(kind, name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}}
}

func workload(name string, ref *schedulingv1beta1.TypedLocalObjectReference, owners []metav1.OwnerReference) *schedulingv1beta1.Workload {
	w := builder.Workload(name, ns).PodGroupTemplate(builder.PodGroupTemplate("t").Gang(3)).Obj()
	w.Spec.ControllerRef, w.OwnerReferences, w.UID = ref, owners, types.UID(name)
	return w
}

func podGroup(name, workloadName string, owners []metav1.OwnerReference) *schedulingv1beta1.PodGroup {
	pg := builder.PodGroup(name, ns).Gang(3).Obj()
	if workloadName != "" {
		pg.Spec.WorkloadRef = &schedulingv1beta1.WorkloadReference{WorkloadName: workloadName, TemplateName: "t"}
	}
	pg.OwnerReferences, pg.UID = owners, types.UID(name)
	return pg
}

func pod(name, app, group string, terminating bool) *corev1.Pod {
	p := builder.Pod(name, ns).Label(builder.AppLabel, app).Obj()
	p.UID, p.Spec.NodeName, p.Status.Phase = types.UID(name), "node-1", corev1.PodRunning
	if group != "" {
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
	}
	if terminating {
		p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		p.Finalizers = []string{"test"}
	}
	return p
}

func fakeFramework(objs ...runtime.Object) *framework.Framework {
	return &framework.Framework{ClientSet: fake.NewClientset(objs...), Namespace: ns}
}

// A StatefulSet's Workload is found by spec.controllerRef only (KEP-6277):
// a Workload it merely controls is not its own, a user's that references it is.
func TestStatefulSetWorkloadsByReference(t *testing.T) {
	gomega.RegisterTestingT(t)
	set := App{Kind: KindStatefulSet, Name: "db", UID: "set-uid"}
	ref := set.ControllerRef()
	other := schedulingv1beta1.TypedLocalObjectReference{APIGroup: "apps", Kind: "StatefulSet", Name: "other"}
	f := fakeFramework(
		workload("referenced", &ref, nil),
		workload("owned-only", nil, controller("StatefulSet", "db", "set-uid")),
		workload("other", &other, controller("StatefulSet", "db", "set-uid")),
		podGroup("by-ref", "referenced", nil),
		podGroup("by-owner", "", controller("StatefulSet", "db", "set-uid")),
		podGroup("stranger", "owned-only", nil),
		pod("db-0", "db", "by-ref", false),
		pod("db-1", "db", "", false),
		pod("db-2", "db", "by-ref", true),
		pod("web-0", "web", "", false),
	)
	s := Read(context.Background(), f, set)
	gomega.Expect(Names(Workloads(context.Background(), f, set))).To(gomega.Equal([]string{"referenced"}))
	gomega.Expect(s.Workloads).To(gomega.ConsistOf(gomega.HaveField("Name", "referenced")))
	gomega.Expect(s.PodGroups).To(gomega.ConsistOf(gomega.HaveField("Name", "by-ref"), gomega.HaveField("Name", "by-owner")), "linked by reference or by ownership")
	gomega.Expect(s.Pods).To(gomega.HaveLen(2))
	gomega.Expect(s.Terminating).To(gomega.Equal([]string{"db-2"}))
	gomega.Expect(s.Grouped()).To(gomega.Equal(1))
	gomega.Expect(s.Ungrouped()).To(gomega.ConsistOf(gomega.HaveField("Name", "db-1")))
	gomega.Expect(s.Bound()).To(gomega.Equal(2))
}

// A Deployment's Workload is the one it controls, with its UID when known; its
// PodGroups are linked through its Workload or its ReplicaSets.
func TestDeploymentWorkloadsByOwnership(t *testing.T) {
	gomega.RegisterTestingT(t)
	d := App{Kind: KindDeployment, Name: "web", UID: "d-uid"}
	ref := d.ControllerRef()
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: ns, UID: "rs-uid", OwnerReferences: controller("Deployment", "web", "d-uid")}}
	f := fakeFramework(rs,
		workload("owned", nil, controller("Deployment", "web", "d-uid")),
		workload("old-incarnation", &ref, controller("Deployment", "web", "old-uid")),
		podGroup("of-rs", "", controller("ReplicaSet", "web-abc", "rs-uid")),
		podGroup("of-old", "old-incarnation", nil),
	)
	s := Read(context.Background(), f, d)
	gomega.Expect(s.Workloads).To(gomega.ConsistOf(gomega.HaveField("Name", "owned")))
	gomega.Expect(s.ReplicaSets).To(gomega.Equal([]string{"web-abc"}))
	gomega.Expect(s.PodGroups).To(gomega.ConsistOf(gomega.HaveField("Name", "of-rs")))
	gomega.Expect(s).To(AtMinCount(3))
	gomega.Expect(s).NotTo(MinCounts(3, 2))
}

func TestExpectPodsUndisturbedCatchesAReplacedPod(t *testing.T) {
	before := State{Pods: []Member{{Name: "a", UID: "1", Node: "n1", Phase: corev1.PodRunning}}}
	now := State{Pods: []Member{{Name: "a", UID: "2", Node: "n1", Phase: corev1.PodRunning}}}
	failures := gomega.InterceptGomegaFailures(func() { ExpectPodsUndisturbed(now, before) })
	if len(failures) == 0 {
		t.Fatal("a pod recreated under the same name passed as undisturbed")
	}
	if f := gomega.InterceptGomegaFailures(func() { ExpectPodsUndisturbed(before, before) }); len(f) != 0 {
		t.Fatalf("identical states: %v", f)
	}
}

func TestPodNamesKeepsWhatTheFilterAccepts(t *testing.T) {
	s := State{Pods: []Member{{Name: "a", Node: "n1"}, {Name: "b", Node: "n2"}, {Name: "c", Node: "n1"}}}
	if got := s.PodNames(nil); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("PodNames(nil) = %v, want every pod", got)
	}
	if got := s.PodNames(func(p Member) bool { return p.Node == "n1" }); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("PodNames(on n1) = %v, want a and c", got)
	}
}
