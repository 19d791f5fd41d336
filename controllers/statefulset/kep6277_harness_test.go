package statefulset

// Shared fixtures of the KEP-6277 unit tests (kep6277_*_test.go): a
// Reconciler wired over a fake API (controllers/internal/fakeapi, the same as
// the Deployment side's), the StatefulSet's caches and wrapped client, and the
// StatefulSet-side objects. Every identifier carries the st prefix so other
// test files of the package cannot collide with them.

import (
	"fmt"
	"sync/atomic"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/intent"
	"github.com/workload-aware/apps-harness/controllers/features"
	"github.com/workload-aware/apps-harness/controllers/internal/fakeapi"
)

const (
	stNS        = "databases"
	stZone      = "topology.kubernetes.io/zone"
	stRack      = "topology.kubernetes.io/rack"
	stRevision1 = "db-7c9d8f6b5"
	stRevision2 = "db-5b4f7c9d8"
)

// stEnv is one Reconciler over one fake API. The wrapped controller client
// and the test share the API's clientset, so its action log shows the order
// of every write.
type stEnv struct {
	*fakeapi.API
	r        *Reconciler
	cc       kubernetes.Interface // r.ControllerClient(client): what the upstream controller is given
	apps     informers.SharedInformerFactory
	sets     cache.Indexer
	pods     cache.Indexer
	gateOn   atomic.Bool
	claimsOn atomic.Bool
}

type stEnvOptions struct {
	gateOff   bool
	claimsOff bool
	// laggingInformers makes the scheduling informers list once and then
	// never hear of a change, as if their watch lagged indefinitely.
	laggingInformers bool
	// notServed leaves the scheduling informers unstarted, as in a process
	// that started while the apiserver did not serve scheduling.k8s.io/v1beta1.
	notServed bool
}

func stNewEnv(t *testing.T, o stEnvOptions) *stEnv {
	t.Helper()
	e := &stEnv{API: fakeapi.New(t, fakeapi.Options{Namespace: stNS, LaggingInformers: o.laggingInformers})}
	// A status update writes the status only, as the apiserver's status
	// subresource does (the fake would store the whole, possibly stale,
	// object and revert a scale).
	e.React("update", "statefulsets", e.updateStatusOnly)
	e.gateOn.Store(!o.gateOff)
	e.claimsOn.Store(!o.claimsOff)
	// Wired as the controller manager wires it. The apps informers start only
	// in the test that runs the upstream controller; the others fill the
	// StatefulSet and pod caches by hand.
	e.apps = informers.NewSharedInformerFactory(e.Client, 0)
	setInf, podInf := e.apps.Apps().V1().StatefulSets(), e.apps.Core().V1().Pods()
	e.sets, e.pods = setInf.Informer().GetIndexer(), podInf.Informer().GetIndexer()
	e.r = NewReconciler(Options{
		Client:       e.Client,
		StatefulSets: setInf.Lister(),
		Pods:         podInf.Lister(),
		PodIndexer:   podInf.Informer().GetIndexer(),
		Scheduling:   e.Sched,
		Recorder:     e.Recorder,
		Gates: features.Gates{
			Workload:                  e.gateOn.Load,
			DRAWorkloadResourceClaims: e.claimsOn.Load,
		},
	})
	e.cc = e.r.ControllerClient(e.Client)
	if !o.notServed {
		e.StartScheduling()
	}
	return e
}

func (e *stEnv) updateStatusOnly(a clienttesting.Action) (bool, runtime.Object, error) {
	if a.GetSubresource() != "status" {
		return false, nil, nil
	}
	obj := a.(clienttesting.UpdateAction).GetObject().(*appsv1.StatefulSet)
	stored, err := e.Client.Tracker().Get(a.GetResource(), a.GetNamespace(), obj.Name)
	if err != nil {
		return true, nil, err
	}
	merged := stored.(*appsv1.StatefulSet).DeepCopy()
	merged.Status = *obj.Status.DeepCopy()
	return true, merged, e.Client.Tracker().Update(a.GetResource(), merged, a.GetNamespace())
}

// storeSet adds or replaces set in the StatefulSet lister (the controller's
// cache) and the fake API, where the controller reads it live before every
// write.
func (e *stEnv) storeSet(set *appsv1.StatefulSet) {
	e.T.Helper()
	e.StoreCached(e.sets, set)
}

// createPod creates pod through the wrapped controller client, as the
// upstream StatefulSet controller does, and on success puts the stored pod
// into the pod lister (as the pod informer would).
func (e *stEnv) createPod(pod *corev1.Pod) (*corev1.Pod, error) {
	e.T.Helper()
	created, err := e.cc.CoreV1().Pods(pod.Namespace).Create(e.Ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	if err := e.pods.Add(created); err != nil {
		e.T.Fatal(err)
	}
	return created, nil
}

func (e *stEnv) mustCreatePod(pod *corev1.Pod) *corev1.Pod {
	e.T.Helper()
	created, err := e.createPod(pod)
	if err != nil {
		e.T.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	return created
}

// deletePod deletes a pod through the wrapped controller client and, on
// success, drops it from the pod lister.
func (e *stEnv) deletePod(name string) error {
	e.T.Helper()
	if err := e.cc.CoreV1().Pods(stNS).Delete(e.Ctx, name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	obj, ok, err := e.pods.GetByKey(stNS + "/" + name)
	if err == nil && ok {
		if err := e.pods.Delete(obj); err != nil {
			e.T.Fatal(err)
		}
	}
	return nil
}

// seedPod stores a pod in the API and the pod lister without any hook.
func (e *stEnv) seedPod(pod *corev1.Pod) {
	e.T.Helper()
	if err := e.Client.Tracker().Add(pod); err != nil {
		e.T.Fatal(err)
	}
	if err := e.pods.Add(pod); err != nil {
		e.T.Fatal(err)
	}
}

// --- objects

func stGang() *intent.StatefulSetSchedulingConfiguration {
	return &intent.StatefulSetSchedulingConfiguration{
		SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
			Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{},
		},
	}
}

func stBasic() *intent.StatefulSetSchedulingConfiguration {
	return &intent.StatefulSetSchedulingConfiguration{
		SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
			Basic: &schedulingv1alpha3.WorkloadPodGroupBasicSchedulingPolicy{},
		},
	}
}

func stClaims() []schedulingv1alpha3.WorkloadPodGroupResourceClaim {
	return []schedulingv1alpha3.WorkloadPodGroupResourceClaim{
		{Name: "shared-device", ResourceClaimTemplateName: ptr.To("shared-device-template")},
		{Name: "pinned", ResourceClaimName: ptr.To("pinned-claim")},
	}
}

// stFull is the KEP's "Opting into Workload-Aware Scheduling" example: gang,
// zone topology, disruptionMode all and shared claims.
func stFull() *intent.StatefulSetSchedulingConfiguration {
	cfg := stGang()
	cfg.SchedulingConstraints = &schedulingv1alpha3.WorkloadPodGroupSchedulingConstraints{
		Topology: []schedulingv1alpha3.TopologyConstraint{{Key: stZone}},
	}
	cfg.DisruptionMode = &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{All: &schedulingv1alpha3.WorkloadPodGroupAllDisruptionMode{}}
	cfg.ResourceClaims = stClaims()
	return cfg
}

// stSet returns a Parallel StatefulSet carrying cfg in the intent annotation
// (nil cfg: no annotation).
func stSet(t *testing.T, name string, replicas int32, cfg *intent.StatefulSetSchedulingConfiguration) *appsv1.StatefulSet {
	t.Helper()
	labels := map[string]string{"app": name}
	set := &appsv1.StatefulSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: stNS, UID: types.UID("sts-uid-" + name),
		},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			ServiceName:         name,
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					PriorityClassName: "database-critical",
					Containers:        []corev1.Container{{Name: "db", Image: "my-db:latest"}},
				},
			},
		},
	}
	if cfg != nil {
		ann, err := intent.SetAnnotationKey(nil, intent.StatefulSetAnnotation, cfg)
		if err != nil {
			t.Fatal(err)
		}
		set.Annotations = ann
	}
	return set
}

func stSetRef(set *appsv1.StatefulSet) *metav1.OwnerReference {
	return metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
}

// stPod is the pod of ordinal i at revision rev, as the upstream controller
// builds it (name, labels, controller ownerReference, template spec).
func stPod(set *appsv1.StatefulSet, i int, rev string) *corev1.Pod {
	name := fmt.Sprintf("%s-%d", set.Name, i)
	labels := map[string]string{
		appsv1.StatefulSetPodNameLabel:        name,
		appsv1.ControllerRevisionHashLabelKey: rev,
	}
	for k, v := range set.Spec.Template.Labels {
		labels[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: set.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*stSetRef(set)},
		},
		Spec: *set.Spec.Template.Spec.DeepCopy(),
	}
}

// createAll creates pods 0..n-1 at rev through the hook.
func (e *stEnv) createAll(set *appsv1.StatefulSet, n int, rev string) []*corev1.Pod {
	e.T.Helper()
	var out []*corev1.Pod
	for i := range n {
		out = append(out, e.mustCreatePod(stPod(set, i, rev)))
	}
	return out
}

// stParentRef is a higher-level controller's controller ownerReference.
func stParentRef() metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet", Name: "llm", UID: "lws-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

// stTemplate is a gang template (minCount > 0) or a basic one (minCount 0).
func stTemplate(name string, minCount int32) schedulingv1beta1.PodGroupTemplate {
	tp := schedulingv1beta1.PodGroupTemplate{Name: name}
	if minCount > 0 {
		tp.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}
	} else {
		tp.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
	}
	return tp
}

// stWorkload is a Workload not created by this controller: spec.controllerRef
// names ref, no managed-by annotation, no ownerReference.
func stWorkload(name string, ref schedulingv1beta1.TypedLocalObjectReference, templates ...schedulingv1beta1.PodGroupTemplate) *schedulingv1beta1.Workload {
	return &schedulingv1beta1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: stNS},
		Spec: schedulingv1beta1.WorkloadSpec{
			ControllerRef:     ref.DeepCopy(),
			PodGroupTemplates: templates,
		},
	}
}

func stRefTo(set *appsv1.StatefulSet) schedulingv1beta1.TypedLocalObjectReference {
	return schedulingv1beta1.TypedLocalObjectReference{APIGroup: "apps", Kind: "StatefulSet", Name: set.Name}
}

func stParentWorkloadRef() schedulingv1beta1.TypedLocalObjectReference {
	return schedulingv1beta1.TypedLocalObjectReference{APIGroup: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet", Name: "llm"}
}

// stPodGroup is a PodGroup not created by this controller.
func stPodGroup(name, workload, template string, minCount int32) *schedulingv1beta1.PodGroup {
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: stNS},
		Spec: schedulingv1beta1.PodGroupSpec{
			WorkloadRef: &schedulingv1beta1.WorkloadReference{WorkloadName: workload, TemplateName: template},
		},
	}
	if minCount > 0 {
		pg.Spec.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}
	} else {
		pg.Spec.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
	}
	return pg
}

// stManagedWorkload is what the controller would have created for set with
// cfg, as already stored (for crash-recovery and scaling set-ups).
func stManagedWorkload(t *testing.T, set *appsv1.StatefulSet, cfg *intent.StatefulSetSchedulingConfiguration) *schedulingv1beta1.Workload {
	t.Helper()
	w, err := BuildWorkload(set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func stGangMin(pg *schedulingv1beta1.PodGroup) int32 {
	if g := pg.Spec.SchedulingPolicy.Gang; g != nil {
		return g.MinCount
	}
	return -1
}

func stTemplateMin(w *schedulingv1beta1.Workload) int32 {
	if len(w.Spec.PodGroupTemplates) == 0 {
		return -2
	}
	if g := w.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang; g != nil {
		return g.MinCount
	}
	return -1
}

// stCheckGrouped asserts pod joins pg: schedulingGroup, the StatefulSet as
// controller, and a non-controller ownerReference to the PodGroup.
func stCheckGrouped(t *testing.T, pod *corev1.Pod, set *appsv1.StatefulSet, pg *schedulingv1beta1.PodGroup) {
	t.Helper()
	if sg := pod.Spec.SchedulingGroup; sg == nil || ptr.Deref(sg.PodGroupName, "") != pg.Name {
		t.Errorf("pod %s schedulingGroup = %+v, want podGroupName %s", pod.Name, pod.Spec.SchedulingGroup, pg.Name)
	}
	if len(pod.OwnerReferences) != 2 {
		t.Fatalf("pod %s ownerReferences = %+v, want the StatefulSet and the PodGroup", pod.Name, pod.OwnerReferences)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != set.UID || ref.Kind != "StatefulSet" {
		t.Errorf("pod %s controller = %+v, want StatefulSet %s", pod.Name, ref, set.Name)
	}
	found := false
	for _, ref := range pod.OwnerReferences {
		if ref.Kind != "PodGroup" {
			continue
		}
		found = true
		if ref.APIVersion != "scheduling.k8s.io/v1beta1" || ref.Name != pg.Name || pg.UID == "" || ref.UID != pg.UID || ptr.Deref(ref.Controller, false) {
			t.Errorf("pod %s PodGroup ownerReference = %+v, want non-controller scheduling.k8s.io/v1beta1 PodGroup %s uid %s", pod.Name, ref, pg.Name, pg.UID)
		}
	}
	if !found {
		t.Errorf("pod %s has no PodGroup ownerReference: %+v", pod.Name, pod.OwnerReferences)
	}
}

// stCheckUngrouped asserts pod is scheduled as upstream: no schedulingGroup,
// only its StatefulSet as owner.
func stCheckUngrouped(t *testing.T, pod *corev1.Pod, set *appsv1.StatefulSet) {
	t.Helper()
	if pod.Spec.SchedulingGroup != nil {
		t.Errorf("pod %s schedulingGroup = %+v, want none", pod.Name, pod.Spec.SchedulingGroup)
	}
	if len(pod.OwnerReferences) != 1 || pod.OwnerReferences[0].UID != set.UID {
		t.Errorf("pod %s ownerReferences = %+v, want only the StatefulSet", pod.Name, pod.OwnerReferences)
	}
}
