package parity

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/intent"
)

// The Observer records what it saw, including owners that an orphaning
// delete later strips, and counts each pod once by its first controller.
// (A fake clientset is enough here: nothing is validated, only recorded.)
func TestObserverRecords(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := fake.NewClientset()
	o := NewObserver(c, "gang")
	if err := o.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{E2ERunLabel: "x", StrategyLabel: StrategyRewrite},
		Annotations: map[string]string{SpecAnnotation: "[sig-apps] StatefulSet x"}}}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "s-uid",
		Annotations: map[string]string{intent.StatefulSetAnnotation: `{"schedulingPolicy":{"gang":{}}}`}},
		Spec: appsv1.StatefulSetSpec{PodManagementPolicy: appsv1.ParallelPodManagement}}
	owner := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "s", UID: "s-uid", Controller: ptr.To(true)}}
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pg", UID: "pg-uid", OwnerReferences: owner},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 1}}}}
	w := &schedulingv1beta1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w", UID: "w-uid", OwnerReferences: owner}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s-0", UID: "p-uid", OwnerReferences: owner},
		Spec: corev1.PodSpec{SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: ptr.To("pg")}}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	must(err)
	_, err = c.AppsV1().StatefulSets("ns").Create(ctx, set, metav1.CreateOptions{})
	must(err)
	_, err = c.SchedulingV1beta1().Workloads("ns").Create(ctx, w, metav1.CreateOptions{})
	must(err)
	_, err = c.SchedulingV1beta1().PodGroups("ns").Create(ctx, pg, metav1.CreateOptions{})
	must(err)
	_, err = c.CoreV1().Pods("ns").Create(ctx, pod, metav1.CreateOptions{})
	must(err)
	waitFor := func(what string, cond func(*Observations) bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return cond(o.Observations()), nil
		}); err != nil {
			t.Fatalf("the observer never recorded %s", what)
		}
	}
	waitFor("the objects", func(r *Observations) bool {
		return r.PodGroups["pg-uid"] != nil && r.Workloads["w-uid"] != nil && r.Pods["s-uid"] != nil && r.Owners["s-uid"] != nil && r.Namespaces["ns"] != nil
	})
	// An orphaning delete of the StatefulSet strips the references; the
	// pod is updated too, and must not count twice.
	pg.OwnerReferences, w.OwnerReferences = nil, nil
	pg.Labels = map[string]string{"changed": "1"}
	_, err = c.SchedulingV1beta1().PodGroups("ns").Update(ctx, pg, metav1.UpdateOptions{})
	must(err)
	_, err = c.SchedulingV1beta1().Workloads("ns").Update(ctx, w, metav1.UpdateOptions{})
	must(err)
	pod.Labels = map[string]string{"changed": "1"}
	_, err = c.CoreV1().Pods("ns").Update(ctx, pod, metav1.UpdateOptions{})
	must(err)
	waitFor("the updates", func(r *Observations) bool { return r.PodGroups["pg-uid"] != nil && r.PodGroups["pg-uid"].Name == "pg" })
	time.Sleep(200 * time.Millisecond)

	r := o.Observations()
	if got := r.PodGroups["pg-uid"]; got.Owner != "s-uid" || !got.Gang {
		t.Errorf("PodGroup %+v: want its first owner and gang kept", got)
	}
	if got := r.Workloads["w-uid"]; got.Owner != "s-uid" {
		t.Errorf("Workload %+v: want its first owner kept", got)
	}
	if got := r.Pods[types.UID("s-uid")]; got.Created != 1 || got.InGroup != 1 {
		t.Errorf("pods %+v: want 1 created, 1 in a group", got)
	}
	if ns := r.Namespaces["ns"]; ns.Strategy != StrategyRewrite || ns.Spec != "[sig-apps] StatefulSet x" {
		t.Errorf("namespace %+v", ns)
	}
	f := Judge(r)
	if len(f) != 1 || !f[0].OK || f[0].Spec != "StatefulSet x" {
		t.Errorf("findings %+v: want the StatefulSet judged OK", f)
	}
}
