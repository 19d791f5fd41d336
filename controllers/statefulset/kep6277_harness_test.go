package statefulset

// Shared fixtures of the KEP-6277 unit tests (kep6277_*_test.go). Every
// identifier carries the st prefix so other test files of the package cannot
// collide with them. The approach is the Deployment side's
// (controllers/deployment/kep6276_harness_test.go): one fake clientset whose
// reactors give scheduling objects UIDs and resourceVersions, real informers,
// and schedulingapi informers started against fake discovery.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/intent"
	"github.com/workload-aware/apps-harness/controllers/features"
	"github.com/workload-aware/apps-harness/controllers/schedulingapi"
)

const (
	stNS          = "databases"
	stSchedGroup  = "scheduling.k8s.io"
	stZone        = "topology.kubernetes.io/zone"
	stRack        = "topology.kubernetes.io/rack"
	stWaitTimeout = 10 * time.Second
	stRevision1   = "db-7c9d8f6b5"
	stRevision2   = "db-5b4f7c9d8"
)

// stEnv is one Reconciler over one fake API. The wrapped controller client
// and the test share the fake clientset, so its action log shows the order of
// every write.
type stEnv struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	r        *Reconciler
	cc       kubernetes.Interface // r.ControllerClient(client): what the upstream controller is given
	apps     informers.SharedInformerFactory
	sched    *schedulingapi.Informers
	sets     cache.Indexer
	pods     cache.Indexer
	recorder *record.FakeRecorder
	gateOn   atomic.Bool
	claimsOn atomic.Bool
	rv       atomic.Int64
	uid      atomic.Int64

	mu       sync.Mutex
	failures map[string]error // "verb resource" -> error returned by the fake API
}

type stEnvOptions struct {
	gateOff   bool
	claimsOff bool
	// laggingInformers makes the scheduling informers list once and then
	// never hear of a change, as if their watch lagged indefinitely.
	laggingInformers bool
}

func stNewEnv(t *testing.T, o stEnvOptions) *stEnv {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &stEnv{
		t:        t,
		ctx:      ctx,
		client:   fake.NewClientset(),
		recorder: record.NewFakeRecorder(1000),
		failures: map[string]error{},
	}
	e.rv.Store(100)
	e.gateOn.Store(!o.gateOff)
	e.claimsOn.Store(!o.claimsOff)
	e.client.Resources = []*metav1.APIResourceList{{
		GroupVersion: schedulingapi.GroupVersion,
		APIResources: []metav1.APIResource{
			{Name: "workloads", Namespaced: true, Kind: "Workload"},
			{Name: "podgroups", Namespaced: true, Kind: "PodGroup"},
		},
	}}
	e.apiServerSemantics()
	if o.laggingInformers {
		e.client.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
			if a.GetResource().Group != stSchedGroup {
				return false, nil, nil
			}
			return true, watch.NewFake(), nil
		})
	}
	// Prepended last, so it runs first: an injected failure wins.
	e.client.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if err, ok := e.failures[a.GetVerb()+" "+a.GetResource().Resource]; ok {
			return true, nil, err
		}
		return false, nil, nil
	})
	// Wired as the controller manager wires it. The apps informers start only
	// in the test that runs the upstream controller; the others fill the
	// StatefulSet and pod caches by hand.
	e.apps = informers.NewSharedInformerFactory(e.client, 0)
	setInf, podInf := e.apps.Apps().V1().StatefulSets(), e.apps.Core().V1().Pods()
	e.sets, e.pods = setInf.Informer().GetIndexer(), podInf.Informer().GetIndexer()
	e.sched = schedulingapi.New(e.client, 0)
	e.r = NewReconciler(Options{
		Client:       e.client,
		StatefulSets: setInf.Lister(),
		Pods:         podInf.Lister(),
		Scheduling:   e.sched,
		Recorder:     e.recorder,
		Gates: features.Gates{
			Workload:                  e.gateOn.Load,
			DRAWorkloadResourceClaims: e.claimsOn.Load,
		},
	})
	e.cc = e.r.ControllerClient(e.client)
	e.sched.PollInterval = 10 * time.Millisecond
	e.sched.Start(klog.NewContext(ctx, logr.Discard()))
	e.eventually("scheduling informers ready", func() bool { return e.sched.Ready() == nil })
	return e
}

// apiServerSemantics makes the fake behave like an apiserver where the code
// under test depends on it: new pods are Pending, a status update writes the
// status only, scheduling objects get a UID and a fresh resourceVersion on
// every write, and an update carrying a stale resourceVersion is a conflict.
func (e *stEnv) apiServerSemantics() {
	e.client.PrependReactor("create", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetResource().Group != stSchedGroup {
			return false, nil, nil
		}
		m, err := meta.Accessor(a.(clienttesting.CreateAction).GetObject())
		if err != nil {
			return true, nil, err
		}
		if m.GetUID() == "" {
			m.SetUID(types.UID(fmt.Sprintf("%s-uid-%d", a.GetResource().Resource, e.uid.Add(1))))
		}
		m.SetResourceVersion(strconv.FormatInt(e.rv.Add(1), 10))
		return false, nil, nil
	})
	// New pods start Pending (the upstream controller treats a pod without a
	// phase as not yet created).
	e.client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if pod, ok := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod); ok && pod.Status.Phase == "" {
			pod.Status.Phase = corev1.PodPending
		}
		return false, nil, nil
	})
	// A status update writes the status only (the fake would store the whole,
	// possibly stale, object and revert a scale).
	e.client.PrependReactor("update", "statefulsets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" {
			return false, nil, nil
		}
		obj := a.(clienttesting.UpdateAction).GetObject().(*appsv1.StatefulSet)
		stored, err := e.client.Tracker().Get(a.GetResource(), a.GetNamespace(), obj.Name)
		if err != nil {
			return true, nil, err
		}
		merged := stored.(*appsv1.StatefulSet).DeepCopy()
		merged.Status = *obj.Status.DeepCopy()
		return true, merged, e.client.Tracker().Update(a.GetResource(), merged, a.GetNamespace())
	})
	e.client.PrependReactor("update", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetResource().Group != stSchedGroup {
			return false, nil, nil
		}
		obj := a.(clienttesting.UpdateAction).GetObject()
		m, err := meta.Accessor(obj)
		if err != nil {
			return true, nil, err
		}
		stored, err := e.client.Tracker().Get(a.GetResource(), a.GetNamespace(), m.GetName())
		if err != nil {
			return true, nil, err
		}
		sm, _ := meta.Accessor(stored)
		if m.GetResourceVersion() != "" && m.GetResourceVersion() != sm.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), m.GetName(),
				fmt.Errorf("resourceVersion %s is stale, stored %s", m.GetResourceVersion(), sm.GetResourceVersion()))
		}
		m.SetUID(sm.GetUID())
		m.SetResourceVersion(strconv.FormatInt(e.rv.Add(1), 10))
		return false, nil, nil
	})
}

// fail makes the fake API answer verb on resource with err until heal.
func (e *stEnv) fail(verb, resource string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failures[verb+" "+resource] = err
}

func (e *stEnv) heal(verb, resource string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.failures, verb+" "+resource)
}

func (e *stEnv) eventually(what string, cond func() bool) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.ctx, 5*time.Millisecond, stWaitTimeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		e.t.Fatalf("timed out waiting for %s", what)
	}
}

// addSet puts set into the StatefulSet lister (the controller's cache).
// addSet puts set into the StatefulSet lister (the controller's cache) and
// the fake API, where the controller reads it live before every write.
func (e *stEnv) addSet(set *appsv1.StatefulSet) {
	e.t.Helper()
	if err := e.sets.Add(set); err != nil {
		e.t.Fatal(err)
	}
	e.storeInAPI(set)
}

func (e *stEnv) updateSet(set *appsv1.StatefulSet) {
	e.t.Helper()
	if err := e.sets.Update(set); err != nil {
		e.t.Fatal(err)
	}
	e.storeInAPI(set)
}

// storeInAPI adds or replaces set in the fake API without recording an action.
func (e *stEnv) storeInAPI(set *appsv1.StatefulSet) {
	e.t.Helper()
	gvr := appsv1.SchemeGroupVersion.WithResource("statefulsets")
	err := e.client.Tracker().Update(gvr, set, set.Namespace)
	if apierrors.IsNotFound(err) {
		err = e.client.Tracker().Add(set)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// createPod creates pod through the wrapped controller client, as the
// upstream StatefulSet controller does, and on success puts the stored pod
// into the pod lister (as the pod informer would).
func (e *stEnv) createPod(pod *corev1.Pod) (*corev1.Pod, error) {
	e.t.Helper()
	created, err := e.cc.CoreV1().Pods(pod.Namespace).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	if err := e.pods.Add(created); err != nil {
		e.t.Fatal(err)
	}
	return created, nil
}

func (e *stEnv) mustCreatePod(pod *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	created, err := e.createPod(pod)
	if err != nil {
		e.t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	return created
}

// deletePod deletes a pod through the wrapped controller client and, on
// success, drops it from the pod lister.
func (e *stEnv) deletePod(name string) error {
	e.t.Helper()
	if err := e.cc.CoreV1().Pods(stNS).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	obj, ok, err := e.pods.GetByKey(stNS + "/" + name)
	if err == nil && ok {
		if err := e.pods.Delete(obj); err != nil {
			e.t.Fatal(err)
		}
	}
	return nil
}

// seed stores obj in the API (with UID and resourceVersion) and waits until
// the scheduling informers have it.
func (e *stEnv) seed(obj runtime.Object) {
	e.t.Helper()
	m, err := meta.Accessor(obj)
	if err != nil {
		e.t.Fatal(err)
	}
	if m.GetUID() == "" {
		m.SetUID(types.UID(fmt.Sprintf("seeded-uid-%d", e.uid.Add(1))))
	}
	m.SetResourceVersion(strconv.FormatInt(e.rv.Add(1), 10))
	if err := e.client.Tracker().Add(obj); err != nil {
		e.t.Fatal(err)
	}
	switch o := obj.(type) {
	case *schedulingv1beta1.Workload:
		e.waitWorkloadCached(o.Name, o.ResourceVersion)
	case *schedulingv1beta1.PodGroup:
		e.waitPodGroupCached(o.Name, o.ResourceVersion)
	}
}

// seedPod stores a pod in the API and the pod lister without any hook.
func (e *stEnv) seedPod(pod *corev1.Pod) {
	e.t.Helper()
	if err := e.client.Tracker().Add(pod); err != nil {
		e.t.Fatal(err)
	}
	if err := e.pods.Add(pod); err != nil {
		e.t.Fatal(err)
	}
}

func (e *stEnv) waitWorkloadCached(name, rv string) {
	e.t.Helper()
	e.eventually("workload "+name+" in the informer", func() bool {
		w, err := e.sched.Scheduling().Workloads().Lister().Workloads(stNS).Get(name)
		return err == nil && (rv == "" || w.ResourceVersion == rv)
	})
}

func (e *stEnv) waitPodGroupCached(name, rv string) {
	e.t.Helper()
	e.eventually("podgroup "+name+" in the informer", func() bool {
		pg, err := e.sched.Scheduling().PodGroups().Lister().PodGroups(stNS).Get(name)
		return err == nil && (rv == "" || pg.ResourceVersion == rv)
	})
}

// syncCaches waits until the scheduling informers hold what the API holds.
func (e *stEnv) syncCaches() {
	e.t.Helper()
	for _, w := range e.workloads() {
		e.waitWorkloadCached(w.Name, w.ResourceVersion)
	}
	for _, pg := range e.podGroups() {
		e.waitPodGroupCached(pg.Name, pg.ResourceVersion)
	}
}

func (e *stEnv) apiWorkload(name string) *schedulingv1beta1.Workload {
	e.t.Helper()
	w, err := e.client.SchedulingV1beta1().Workloads(stNS).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("getting workload %s: %v", name, err)
	}
	return w
}

func (e *stEnv) apiPodGroup(name string) *schedulingv1beta1.PodGroup {
	e.t.Helper()
	pg, err := e.client.SchedulingV1beta1().PodGroups(stNS).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("getting podgroup %s: %v", name, err)
	}
	return pg
}

// workloads and podGroups list the API's objects straight from the tracker
// (no action is recorded).
func (e *stEnv) workloads() []*schedulingv1beta1.Workload {
	e.t.Helper()
	gvr := schedulingv1beta1.SchemeGroupVersion.WithResource("workloads")
	gvk := schedulingv1beta1.SchemeGroupVersion.WithKind("Workload")
	obj, err := e.client.Tracker().List(gvr, gvk, stNS)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []*schedulingv1beta1.Workload
	for i := range obj.(*schedulingv1beta1.WorkloadList).Items {
		out = append(out, &obj.(*schedulingv1beta1.WorkloadList).Items[i])
	}
	return out
}

func (e *stEnv) podGroups() []*schedulingv1beta1.PodGroup {
	e.t.Helper()
	gvr := schedulingv1beta1.SchemeGroupVersion.WithResource("podgroups")
	gvk := schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup")
	obj, err := e.client.Tracker().List(gvr, gvk, stNS)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []*schedulingv1beta1.PodGroup
	for i := range obj.(*schedulingv1beta1.PodGroupList).Items {
		out = append(out, &obj.(*schedulingv1beta1.PodGroupList).Items[i])
	}
	return out
}

// onlyWorkload / onlyPodGroup return the single object of their kind.
func (e *stEnv) onlyWorkload() *schedulingv1beta1.Workload {
	e.t.Helper()
	ws := e.workloads()
	if len(ws) != 1 {
		e.t.Fatalf("%d Workloads in the API, want 1", len(ws))
	}
	return ws[0]
}

func (e *stEnv) onlyPodGroup() *schedulingv1beta1.PodGroup {
	e.t.Helper()
	pgs := e.podGroups()
	if len(pgs) != 1 {
		e.t.Fatalf("%d PodGroups in the API, want 1", len(pgs))
	}
	return pgs[0]
}

func (e *stEnv) apiPod(name string) *corev1.Pod {
	e.t.Helper()
	p, err := e.client.CoreV1().Pods(stNS).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("getting pod %s: %v", name, err)
	}
	return p
}

// stWrites lists the mutating actions ("create podgroups", ...), ignoring
// reads, list/watch of the informers, discovery and events.
func stWrites(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		switch a.GetVerb() {
		case "create", "update", "patch", "delete", "deletecollection":
		default:
			continue
		}
		if a.GetResource().Resource == "events" {
			continue
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out
}

func (e *stEnv) writes() []string { return stWrites(e.client.Actions()) }

// schedulingWrites are the writes on Workloads and PodGroups.
func (e *stEnv) schedulingWrites() []string {
	var out []string
	for _, w := range e.writes() {
		if strings.HasSuffix(w, " workloads") || strings.HasSuffix(w, " podgroups") {
			out = append(out, w)
		}
	}
	return out
}

// schedulingCalls lists every scheduling.k8s.io action except the informers'
// list and watch.
func (e *stEnv) schedulingCalls() []string {
	var out []string
	for _, a := range e.client.Actions() {
		if a.GetResource().Group == stSchedGroup && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

// updatedObjects returns the objects of the update actions on resource.
func (e *stEnv) updatedObjects(resource string) []runtime.Object {
	var out []runtime.Object
	for _, a := range e.client.Actions() {
		if ua, ok := a.(clienttesting.UpdateAction); ok && a.GetVerb() == "update" && a.GetResource().Resource == resource {
			out = append(out, ua.GetObject())
		}
	}
	return out
}

func (e *stEnv) count(verb, resource string) int {
	n := 0
	for _, a := range e.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

// events drains the recorded events.
func (e *stEnv) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.recorder.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func stHasEvent(events []string, prefix string) bool {
	for _, ev := range events {
		if strings.HasPrefix(ev, prefix) {
			return true
		}
	}
	return false
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
	e.t.Helper()
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
