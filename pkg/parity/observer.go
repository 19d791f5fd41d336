// Package parity records and judges `make parity`: Kubernetes' own [sig-apps]
// e2e specs run against an implementation, with scheduling intent injected
// into every Deployment and StatefulSet they create (fixtures/parity).
//
// Passing upstream's specs is half the claim. The other half is that intent
// had its effect: the Observer watches the cluster while the specs run and
// records, for every Deployment and StatefulSet in an e2e namespace, its
// intent, the Workloads and PodGroups that name it (or its ReplicaSets) as
// owner, and whether each pod it created was placed in a PodGroup. Judge
// turns that record into findings; Report compares runs with the baseline
// (stock kube-controller-manager) and writes parity.md.
package parity

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/workload-aware/apps-harness/api/intent"
)

// E2ERunLabel marks the namespaces the upstream e2e framework creates; the
// intent policies and the Observer touch nothing else.
const E2ERunLabel = "e2e-run"

// Observations is what the Observer saw during one run.
type Observations struct {
	Mode     string    `json:"mode"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Namespaces of the e2e framework seen during the run.
	Namespaces map[string]*Namespace `json:"namespaces"`
	// Owners are the Deployments and StatefulSets, by UID.
	Owners map[types.UID]*Owner `json:"owners"`
	// ReplicaSets by UID.
	ReplicaSets map[types.UID]*ReplicaSet `json:"replicaSets"`
	// Workloads and PodGroups by UID.
	Workloads map[types.UID]*Object `json:"workloads"`
	PodGroups map[types.UID]*Object `json:"podGroups"`
	// Pods by their controller's UID (a ReplicaSet's or a StatefulSet's):
	// how many were created, and how many of those named a PodGroup.
	Pods map[types.UID]*PodCount `json:"pods"`
}

// Namespace is what the parity binary wrote on a spec's namespace.
type Namespace struct {
	// Spec is the spec's full text.
	Spec string `json:"spec,omitempty"`
	// Strategy: StrategyRewrite, StrategyAsWritten or "" (not gang mode).
	Strategy string `json:"strategy,omitempty"`
}

// Owner is a Deployment or StatefulSet.
type Owner struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Intent when first seen: "" (none), "basic", "gang" or "invalid".
	Intent string `json:"intent"`
	// IntentChanged: a later write changed or removed it (not judged).
	IntentChanged bool `json:"intentChanged,omitempty"`
	// Strategy: the Deployment's strategy type, the StatefulSet's
	// podManagementPolicy, when first seen.
	Strategy string `json:"strategy"`
	// RewrittenFrom: the strategy the spec wrote, when the gang policy
	// rewrote it.
	RewrittenFrom string `json:"rewrittenFrom,omitempty"`
}

// ReplicaSet records a ReplicaSet's Deployment.
type ReplicaSet struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Deployment is the controller owner when first seen; Adopted means it
	// had none then (created by a spec, adopted later): its pods predate
	// the Deployment's intent and are not judged.
	Deployment types.UID `json:"deployment,omitempty"`
	Adopted    bool      `json:"adopted,omitempty"`
}

// Object is a Workload or PodGroup.
type Object struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Owner     types.UID `json:"owner,omitempty"`
	Gang      bool      `json:"gang,omitempty"`
}

// PodCount counts one controller's pods.
type PodCount struct {
	Created int `json:"created"`
	InGroup int `json:"inGroup"`
	// FirstName names one pod, for the report.
	FirstName string `json:"firstName,omitempty"`
}

// Observer watches the cluster during a run.
type Observer struct {
	client kubernetes.Interface
	mu     sync.Mutex
	obs    *Observations
	// seenPods: each pod is counted once, when first seen.
	seenPods map[types.UID]bool
}

// NewObserver returns an Observer of the cluster behind client.
func NewObserver(client kubernetes.Interface, mode string) *Observer {
	return &Observer{client: client, seenPods: map[types.UID]bool{}, obs: &Observations{
		Mode: mode, Namespaces: map[string]*Namespace{}, Owners: map[types.UID]*Owner{},
		ReplicaSets: map[types.UID]*ReplicaSet{}, Workloads: map[types.UID]*Object{},
		PodGroups: map[types.UID]*Object{}, Pods: map[types.UID]*PodCount{},
	}}
}

// Start watches until ctx ends; it returns once the caches have synced.
func (o *Observer) Start(ctx context.Context) error {
	o.obs.Started = time.Now()
	f := informers.NewSharedInformerFactory(o.client, 0)
	handlers := []struct {
		informer cache.SharedIndexInformer
		add      func(obj any)
	}{
		{f.Core().V1().Namespaces().Informer(), o.namespace},
		{f.Apps().V1().Deployments().Informer(), o.owner},
		{f.Apps().V1().StatefulSets().Informer(), o.owner},
		{f.Apps().V1().ReplicaSets().Informer(), o.replicaSet},
		{f.Scheduling().V1beta1().Workloads().Informer(), o.workload},
		{f.Scheduling().V1beta1().PodGroups().Informer(), o.podGroup},
		{f.Core().V1().Pods().Informer(), o.pod},
	}
	for _, h := range handlers {
		add := h.add
		if _, err := h.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    add,
			UpdateFunc: func(_, obj any) { add(obj) },
		}); err != nil {
			return err
		}
	}
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("parity observer: the %v cache did not sync", typ)
		}
	}
	return nil
}

// Observations returns a copy of what was seen so far, finished now.
func (o *Observer) Observations() *Observations {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.obs.Finished = time.Now()
	data, _ := json.Marshal(o.obs)
	out := &Observations{}
	_ = json.Unmarshal(data, out)
	return out
}

// WriteFile writes the observations as JSON.
func (o *Observations) WriteFile(path string) error {
	data, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// ReadObservations reads a file WriteFile wrote.
func ReadObservations(path string) (*Observations, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	o := &Observations{}
	if err := json.Unmarshal(data, o); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return o, nil
}

func (o *Observer) namespace(obj any) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return
	}
	if _, e2e := ns.Labels[E2ERunLabel]; e2e {
		o.mu.Lock()
		o.obs.Namespaces[ns.Name] = &Namespace{Spec: ns.Annotations[SpecAnnotation], Strategy: ns.Labels[StrategyLabel]}
		o.mu.Unlock()
	}
}

// intentOf reads the object's intent: the native field is not served in
// 1.37, so the annotation the reference documents (api/intent) is what the
// policies write.
func intentOf(annotations map[string]string, key string) string {
	cfg, err := intent.FromAnnotation(annotations, key)
	switch {
	case err != nil:
		return "invalid"
	case cfg == nil:
		return ""
	case cfg.IsGang():
		return "gang"
	default:
		return "basic"
	}
}

func (o *Observer) owner(obj any) {
	var meta metav1.ObjectMeta
	var rec Owner
	switch x := obj.(type) {
	case *appsv1.Deployment:
		meta = x.ObjectMeta
		rec = Owner{Kind: "Deployment", Intent: intentOf(x.Annotations, intent.DeploymentAnnotation), Strategy: string(x.Spec.Strategy.Type)}
	case *appsv1.StatefulSet:
		meta = x.ObjectMeta
		rec = Owner{Kind: "StatefulSet", Intent: intentOf(x.Annotations, intent.StatefulSetAnnotation), Strategy: string(x.Spec.PodManagementPolicy)}
	default:
		return
	}
	rec.Namespace, rec.Name, rec.RewrittenFrom = meta.Namespace, meta.Name, meta.Annotations[RewrittenFromAnnotation]
	o.mu.Lock()
	defer o.mu.Unlock()
	if seen, ok := o.obs.Owners[meta.UID]; ok {
		if seen.Intent != rec.Intent {
			seen.IntentChanged = true
		}
		return
	}
	o.obs.Owners[meta.UID] = &rec
}

func controllerUID(meta metav1.ObjectMeta) types.UID {
	if ref := metav1.GetControllerOf(&meta); ref != nil {
		return ref.UID
	}
	return ""
}

func (o *Observer) replicaSet(obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, seen := o.obs.ReplicaSets[rs.UID]; seen {
		return
	}
	owner := controllerUID(rs.ObjectMeta)
	o.obs.ReplicaSets[rs.UID] = &ReplicaSet{Namespace: rs.Namespace, Name: rs.Name, Deployment: owner, Adopted: owner == ""}
}

func (o *Observer) workload(obj any) {
	w, ok := obj.(*schedulingv1beta1.Workload)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.obs.Workloads[w.UID] = merge(o.obs.Workloads[w.UID], &Object{Namespace: w.Namespace, Name: w.Name, Owner: controllerUID(w.ObjectMeta)})
}

// merge keeps what an object was: an owner, once seen, stays recorded (an
// orphaning delete of the owner strips the reference later), and so does
// a gang policy.
func merge(seen, now *Object) *Object {
	if seen == nil {
		return now
	}
	if now.Owner == "" {
		now.Owner = seen.Owner
	}
	now.Gang = now.Gang || seen.Gang
	return now
}

func (o *Observer) podGroup(obj any) {
	pg, ok := obj.(*schedulingv1beta1.PodGroup)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.obs.PodGroups[pg.UID] = merge(o.obs.PodGroups[pg.UID], &Object{Namespace: pg.Namespace, Name: pg.Name, Owner: controllerUID(pg.ObjectMeta),
		Gang: pg.Spec.SchedulingPolicy.Gang != nil})
}

// pod counts a pod once, by the controller it had when first seen: a pod
// a spec created by hand and a controller adopted later is not counted.
func (o *Observer) pod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seenPods[p.UID] {
		return
	}
	o.seenPods[p.UID] = true
	owner := controllerUID(p.ObjectMeta)
	if owner == "" {
		return
	}
	c := o.obs.Pods[owner]
	if c == nil {
		c = &PodCount{FirstName: p.Name}
		o.obs.Pods[owner] = c
	}
	c.Created++
	if p.Spec.SchedulingGroup != nil && p.Spec.SchedulingGroup.PodGroupName != nil {
		c.InGroup++
	}
}
