package deployment

// Shared fixtures of the KEP-6276 unit tests (kep6276_*_test.go): a
// Reconciler wired over a fake API (controllers/internal/fakeapi), and the
// Deployment-side objects. Every identifier carries the kt prefix so other
// test files of the package cannot collide with them.

import (
	"context"
	"fmt"
	"sync"
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
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/controller"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/intent"
	"github.com/workload-aware/apps-harness/controllers/features"
	"github.com/workload-aware/apps-harness/controllers/internal/fakeapi"
)

const (
	ktNS   = "ml-serving"
	ktZone = "topology.kubernetes.io/zone"
)

// ktEnv is one Reconciler over one fake API. Both controller clients are the
// API's clientset, so its action log shows the order of every write.
type ktEnv struct {
	*fakeapi.API
	r        *Reconciler
	workers  *Workers
	apps     informers.SharedInformerFactory
	deploys  cache.Indexer
	gateOn   atomic.Bool
	claimsOn atomic.Bool

	handBackMu sync.Mutex
	handedBack []string // Deployments handed back to the upstream controller
}

// handedBackKeys returns the Deployments handed back so far, in order.
func (e *ktEnv) handedBackKeys() []string {
	e.handBackMu.Lock()
	defer e.handBackMu.Unlock()
	return append([]string(nil), e.handedBack...)
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
	e := &ktEnv{API: fakeapi.New(t, fakeapi.Options{Namespace: ktNS})}
	e.gateOn.Store(!o.gateOff)
	e.claimsOn.Store(!o.claimsOff)
	// Wired as the controller manager wires it. The apps informers start only
	// in tests that run the upstream controller; others fill the Deployment
	// cache by hand.
	e.apps = informers.NewSharedInformerFactory(e.Client, 0)
	dInf, rsInf := e.apps.Apps().V1().Deployments(), e.apps.Apps().V1().ReplicaSets()
	e.deploys = dInf.Informer().GetIndexer()
	e.r = NewReconciler(Options{
		DeploymentClient: e.Client,
		ReplicaSetClient: e.Client,
		Deployments:      dInf.Lister(),
		Scheduling:       e.Sched,
		Recorder:         e.Recorder,
		Gates: features.Gates{
			Workload:                  e.gateOn.Load,
			DRAWorkloadResourceClaims: e.claimsOn.Load,
		},
		HandBack: func(d *appsv1.Deployment) {
			e.handBackMu.Lock()
			defer e.handBackMu.Unlock()
			e.handedBack = append(e.handedBack, d.Namespace+"/"+d.Name)
		},
	})
	// The workers register the scheduling informers' event handlers the
	// Reconciler relies on; they are not run, so every write in a test is
	// the test's own call.
	e.workers = NewWorkers(e.r, dInf.Informer(), rsInf.Informer(), rsInf.Lister())
	if !o.notServed {
		e.StartScheduling()
	}
	return e
}

// storeDeployment adds or replaces d in the Deployment lister (the
// controller's cache) and the fake API, where the controller reads it live
// before every write.
func (e *ktEnv) storeDeployment(d *appsv1.Deployment) {
	e.T.Helper()
	e.StoreCached(e.deploys, d)
}

// replicaSet returns ktReplicaSet(d, hash, replicas), stored in the fake API
// as the Deployment controller would have created it.
func (e *ktEnv) replicaSet(d *appsv1.Deployment, hash string, replicas int32) *appsv1.ReplicaSet {
	e.T.Helper()
	rs := ktReplicaSet(d, hash, replicas)
	e.Store(rs)
	return rs
}

// ensureWorkloadCached runs EnsureWorkload and waits until the informer holds
// the result, so the next call sees it through the lister.
func (e *ktEnv) ensureWorkloadCached(d *appsv1.Deployment) *schedulingv1beta1.Workload {
	e.T.Helper()
	w, err := e.r.EnsureWorkload(e.Ctx, d)
	if err != nil || w == nil {
		e.T.Fatalf("EnsureWorkload = %v, %v; want a Workload", w, err)
	}
	e.WaitWorkloadCached(w.Name, w.ResourceVersion)
	return w
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
	p.writesAtCall = append(p.writesAtCall, fakeapi.Writes(p.client.Actions()))
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

func (p *ktPodControl) DeletePod(ctx context.Context, namespace string, podID string, object runtime.Object) error {
	p.mu.Lock()
	p.calls++
	p.writesAtCall = append(p.writesAtCall, fakeapi.Writes(p.client.Actions()))
	p.mu.Unlock()
	return p.FakePodControl.DeletePod(ctx, namespace, podID, object)
}

func ktIndexOf(list []string, item string) int {
	for i, s := range list {
		if s == item {
			return i
		}
	}
	return -1
}
