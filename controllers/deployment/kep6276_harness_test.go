package deployment

// Shared fixtures of the KEP-6276 unit tests (kep6276_*_test.go). Every
// identifier carries the kt prefix so other test files of the package cannot
// collide with them.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/kubernetes/pkg/controller"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/intent"
	"github.com/workload-aware/apps-harness/controllers/features"
	"github.com/workload-aware/apps-harness/controllers/schedulingapi"
)

const (
	ktNS          = "ml-serving"
	ktSchedGroup  = "scheduling.k8s.io"
	ktZone        = "topology.kubernetes.io/zone"
	ktWaitTimeout = 10 * time.Second
)

// ktEnv is one Reconciler over one fake API. Both controller clients are the
// same fake clientset, so its action log shows the order of every write.
type ktEnv struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	r        *Reconciler
	workers  *Workers
	apps     informers.SharedInformerFactory
	sched    *schedulingapi.Informers
	deploys  cache.Indexer
	recorder *record.FakeRecorder
	gateOn   atomic.Bool
	claimsOn atomic.Bool
	rv       atomic.Int64
	uid      atomic.Int64
}

type ktEnvOptions struct {
	// notServed leaves the scheduling informers unstarted: Ready() fails, as
	// when the apiserver does not serve scheduling.k8s.io/v1beta1.
	notServed bool
	gateOff   bool
	claimsOff bool
}

func ktNewEnv(t *testing.T, o ktEnvOptions) *ktEnv {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &ktEnv{
		t:        t,
		ctx:      ctx,
		client:   fake.NewClientset(),
		recorder: record.NewFakeRecorder(1000),
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
	// Wired as the controller manager wires it. The apps informers start only
	// in tests that run the upstream controller; others fill the Deployment
	// cache by hand.
	e.apps = informers.NewSharedInformerFactory(e.client, 0)
	dInf, rsInf := e.apps.Apps().V1().Deployments(), e.apps.Apps().V1().ReplicaSets()
	e.deploys = dInf.Informer().GetIndexer()
	e.sched = schedulingapi.New(e.client, 0)
	e.r = NewReconciler(Options{
		DeploymentClient: e.client,
		ReplicaSetClient: e.client,
		Deployments:      dInf.Lister(),
		Scheduling:       e.sched,
		Recorder:         e.recorder,
		Gates: features.Gates{
			Workload:                  e.gateOn.Load,
			DRAWorkloadResourceClaims: e.claimsOn.Load,
		},
	})
	// The workers register the scheduling informers' event handlers the
	// Reconciler relies on; they are not run, so every write in a test is
	// the test's own call.
	e.workers = NewWorkers(e.r, dInf.Informer(), rsInf.Informer(), rsInf.Lister())
	if !o.notServed {
		e.sched.PollInterval = 10 * time.Millisecond
		e.sched.Start(ctx)
		e.eventually("scheduling informers ready", func() bool { return e.sched.Ready() == nil })
	}
	return e
}

// apiServerSemantics makes the fake behave like an apiserver where the code
// under test depends on it: scheduling objects get a UID and a fresh
// resourceVersion on every write, and an update carrying a stale
// resourceVersion is a conflict.
func (e *ktEnv) apiServerSemantics() {
	e.client.PrependReactor("create", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetResource().Group != ktSchedGroup {
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
	e.client.PrependReactor("update", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetResource().Group != ktSchedGroup {
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

func (e *ktEnv) eventually(what string, cond func() bool) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.ctx, 5*time.Millisecond, ktWaitTimeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		e.t.Fatalf("timed out waiting for %s", what)
	}
}

// addDeployment puts d into the Deployment lister (the controller's cache)
// and the fake API, where the controller reads it live before every write.
func (e *ktEnv) addDeployment(d *appsv1.Deployment) {
	e.t.Helper()
	if err := e.deploys.Add(d); err != nil {
		e.t.Fatal(err)
	}
	e.storeInAPI(appsv1.SchemeGroupVersion.WithResource("deployments"), d)
}

func (e *ktEnv) updateDeployment(d *appsv1.Deployment) {
	e.t.Helper()
	if err := e.deploys.Update(d); err != nil {
		e.t.Fatal(err)
	}
	e.storeInAPI(appsv1.SchemeGroupVersion.WithResource("deployments"), d)
}

// storeInAPI adds or replaces obj in the fake API without recording an action.
func (e *ktEnv) storeInAPI(gvr schema.GroupVersionResource, obj runtime.Object) {
	e.t.Helper()
	m, err := meta.Accessor(obj)
	if err != nil {
		e.t.Fatal(err)
	}
	err = e.client.Tracker().Update(gvr, obj, m.GetNamespace())
	if apierrors.IsNotFound(err) {
		err = e.client.Tracker().Add(obj)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// replicaSet returns ktReplicaSet(d, hash, replicas), stored in the fake API
// as the Deployment controller would have created it.
func (e *ktEnv) replicaSet(d *appsv1.Deployment, hash string, replicas int32) *appsv1.ReplicaSet {
	e.t.Helper()
	rs := ktReplicaSet(d, hash, replicas)
	e.storeInAPI(appsv1.SchemeGroupVersion.WithResource("replicasets"), rs)
	return rs
}

// seed stores obj in the API (with UID and resourceVersion) and waits until
// the scheduling informers have it.
func (e *ktEnv) seed(obj runtime.Object) {
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

func (e *ktEnv) waitWorkloadCached(name, rv string) {
	e.t.Helper()
	e.eventually("workload "+name+" in the informer", func() bool {
		w, err := e.sched.Scheduling().Workloads().Lister().Workloads(ktNS).Get(name)
		return err == nil && (rv == "" || w.ResourceVersion == rv)
	})
}

func (e *ktEnv) waitWorkloadGone(name string) {
	e.t.Helper()
	e.eventually("workload "+name+" gone from the informer", func() bool {
		_, err := e.sched.Scheduling().Workloads().Lister().Workloads(ktNS).Get(name)
		return apierrors.IsNotFound(err)
	})
}

func (e *ktEnv) waitPodGroupCached(name, rv string) {
	e.t.Helper()
	e.eventually("podgroup "+name+" in the informer", func() bool {
		pg, err := e.sched.Scheduling().PodGroups().Lister().PodGroups(ktNS).Get(name)
		return err == nil && (rv == "" || pg.ResourceVersion == rv)
	})
}

func (e *ktEnv) waitPodGroupGone(name string) {
	e.t.Helper()
	e.eventually("podgroup "+name+" gone from the informer", func() bool {
		_, err := e.sched.Scheduling().PodGroups().Lister().PodGroups(ktNS).Get(name)
		return apierrors.IsNotFound(err)
	})
}

func (e *ktEnv) apiWorkload(name string) *schedulingv1beta1.Workload {
	e.t.Helper()
	w, err := e.client.SchedulingV1beta1().Workloads(ktNS).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("getting workload %s: %v", name, err)
	}
	return w
}

func (e *ktEnv) apiPodGroup(name string) *schedulingv1beta1.PodGroup {
	e.t.Helper()
	pg, err := e.client.SchedulingV1beta1().PodGroups(ktNS).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("getting podgroup %s: %v", name, err)
	}
	return pg
}

// deleteFromAPI removes an object behind the controllers' backs (no action is
// recorded, as if another client deleted it).
func (e *ktEnv) deleteFromAPI(resource, name string) {
	e.t.Helper()
	gvr := schedulingv1beta1.SchemeGroupVersion.WithResource(resource)
	if err := e.client.Tracker().Delete(gvr, ktNS, name); err != nil {
		e.t.Fatal(err)
	}
}

// ensureWorkloadCached runs EnsureWorkload and waits until the informer holds
// the result, so the next call sees it through the lister.
func (e *ktEnv) ensureWorkloadCached(d *appsv1.Deployment) *schedulingv1beta1.Workload {
	e.t.Helper()
	w, err := e.r.EnsureWorkload(e.ctx, d)
	if err != nil || w == nil {
		e.t.Fatalf("EnsureWorkload = %v, %v; want a Workload", w, err)
	}
	e.waitWorkloadCached(w.Name, w.ResourceVersion)
	return w
}

// writes lists the mutating actions ("create podgroups", ...) recorded so far,
// ignoring reads, list/watch of the informers, discovery and events.
func ktWrites(actions []clienttesting.Action) []string {
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

func (e *ktEnv) writes() []string { return ktWrites(e.client.Actions()) }

// count counts actions with verb on resource (reads included).
func (e *ktEnv) count(verb, resource string) int {
	n := 0
	for _, a := range e.client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

// schedulingActions lists every action of any verb on scheduling.k8s.io.
func (e *ktEnv) schedulingActions() []string {
	var out []string
	for _, a := range e.client.Actions() {
		if a.GetResource().Group == ktSchedGroup {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

// events drains the recorded events.
func (e *ktEnv) events() []string {
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

func ktHasEvent(events []string, prefix string) bool {
	for _, ev := range events {
		if strings.HasPrefix(ev, prefix) {
			return true
		}
	}
	return false
}

// --- objects

func ktGang(minCount *int32) *intent.DeploymentSchedulingConfiguration {
	return &intent.DeploymentSchedulingConfiguration{
		SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
			Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{MinCount: minCount},
		},
	}
}

// ktFullIntent is KEP example 1 plus the two kinds of resource claims.
func ktFullIntent() *intent.DeploymentSchedulingConfiguration {
	cfg := ktGang(nil)
	cfg.SchedulingConstraints = &schedulingv1alpha3.WorkloadPodGroupSchedulingConstraints{
		Topology: []schedulingv1alpha3.TopologyConstraint{{Key: ktZone}},
	}
	cfg.DisruptionMode = &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{All: &schedulingv1alpha3.WorkloadPodGroupAllDisruptionMode{}}
	cfg.ResourceClaims = []schedulingv1alpha3.WorkloadPodGroupResourceClaim{
		{Name: "gpu-pool", ResourceClaimTemplateName: ptr.To("gpu-template")},
		{Name: "shared", ResourceClaimName: ptr.To("pinned-claim")},
	}
	return cfg
}

// ktDeployment returns a Recreate Deployment carrying cfg in the intent
// annotation (nil cfg: no annotation).
func ktDeployment(t *testing.T, name string, replicas *int32, cfg *intent.DeploymentSchedulingConfiguration) *appsv1.Deployment {
	t.Helper()
	labels := map[string]string{"app": "kt"}
	d := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ktNS, UID: types.UID("deploy-uid-" + ktShort(name)),
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "inference-server:v1"}}},
			},
		},
	}
	if cfg != nil {
		ann, err := intent.SetAnnotation(nil, cfg)
		if err != nil {
			t.Fatal(err)
		}
		d.Annotations = ann
	}
	return d
}

func ktShort(s string) string {
	if len(s) > 20 {
		return fmt.Sprintf("%s-%d", s[:20], len(s))
	}
	return s
}

// ktReplicaSet returns d's ReplicaSet for pod-template-hash hash, named and
// labelled as the upstream Deployment controller does.
func ktReplicaSet(d *appsv1.Deployment, hash string, replicas int32) *appsv1.ReplicaSet {
	tmpl := d.Spec.Template.DeepCopy()
	tmpl.Labels = map[string]string{"app": "kt", appsv1.DefaultDeploymentUniqueLabelKey: hash}
	return &appsv1.ReplicaSet{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            PodGroupName(d.Name, hash),
			Namespace:       d.Namespace,
			UID:             types.UID("rs-uid-" + hash),
			Labels:          tmpl.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels},
			Template: *tmpl,
		},
	}
}

func ktRSControllerRef(rs *appsv1.ReplicaSet) *metav1.OwnerReference {
	return metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
}

// ktPodControl records what the ReplicaSet controller's pod control receives,
// and the writes the API had seen at the moment it was called.
type ktPodControl struct {
	controller.FakePodControl
	client *fake.Clientset

	mu             sync.Mutex
	calls          int
	templates      []*corev1.PodTemplateSpec // the pointers received
	writesAtCall   [][]string
	generateNames  []string
	controllerRefs []metav1.OwnerReference
}

func (p *ktPodControl) record(template *corev1.PodTemplateSpec, controllerRef *metav1.OwnerReference, generateName string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	p.templates = append(p.templates, template)
	p.writesAtCall = append(p.writesAtCall, ktWrites(p.client.Actions()))
	p.generateNames = append(p.generateNames, generateName)
	if controllerRef != nil {
		p.controllerRefs = append(p.controllerRefs, *controllerRef)
	}
}

func (p *ktPodControl) CreatePods(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, object runtime.Object, controllerRef *metav1.OwnerReference) error {
	p.record(template, controllerRef, "")
	return p.FakePodControl.CreatePods(ctx, namespace, template, object, controllerRef)
}

func (p *ktPodControl) CreatePodsWithGenerateName(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, object runtime.Object, controllerRef *metav1.OwnerReference, generateName string) error {
	p.record(template, controllerRef, generateName)
	return p.FakePodControl.CreatePodsWithGenerateName(ctx, namespace, template, object, controllerRef, generateName)
}

func ktIndexOf(list []string, item string) int {
	for i, s := range list {
		if s == item {
			return i
		}
	}
	return -1
}
