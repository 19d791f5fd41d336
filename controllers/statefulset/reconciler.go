// Package statefulset layers KEP-6277 onto the upstream StatefulSet controller
// of k8s.io/kubernetes, which runs unchanged. That controller creates and
// deletes pods only through its clientset; a wrapped clientset resolves the
// StatefulSet's Workload and PodGroup before each pod write:
//
//   - discovery by reference, never by name: the Workload whose
//     spec.controllerRef is the StatefulSet, the PodGroup whose
//     spec.workloadRef names that Workload's template;
//   - creation only while the StatefulSet has no pods; afterwards discover and
//     use, and reconcile minCount only on the objects this controller created
//     (managed-by annotation and a controller ownerReference to this UID);
//   - composition: a parent controller ownerReference plus the
//     group-template-name annotation makes the PodGroup come from the
//     parent's Workload template (no own Workload);
//   - before a pod is created or deleted, the Workload template and then the
//     PodGroup carry the replica-derived minCount; a failure blocks the pod
//     write, and the upstream controller retries the sync.
//
// With the WorkloadWithStatefulSet gate off every hook passes straight through.
package statefulset

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/kubernetes/pkg/controller"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/intent"
	"github.com/workload-aware/apps-harness/controllers/crashpoint"
	"github.com/workload-aware/apps-harness/controllers/events"
	"github.com/workload-aware/apps-harness/controllers/features"
	"github.com/workload-aware/apps-harness/controllers/objcache"
	"github.com/workload-aware/apps-harness/controllers/ownerguard"
	"github.com/workload-aware/apps-harness/controllers/schedulingapi"
)

// DefaultGates reads the process's feature gates, with WorkloadWithStatefulSet
// as the controller's own.
func DefaultGates() features.Gates { return features.ProcessGates(features.WorkloadWithStatefulSet) }

// Options wires a Reconciler.
type Options struct {
	Client       kubernetes.Interface
	StatefulSets appslisters.StatefulSetLister
	Pods         corelisters.PodLister
	// PodIndexer is the same pod cache's indexer (the informer's
	// GetIndexer()); NewReconciler indexes it by controller reference.
	PodIndexer cache.Indexer
	Scheduling *schedulingapi.Informers
	Recorder   record.EventRecorder
	Gates      features.Gates
}

// Reconciler resolves the scheduling objects of StatefulSets.
type Reconciler struct {
	client         kubernetes.Interface
	sets           appslisters.StatefulSetLister
	pods           corelisters.PodLister
	podIndex       cache.Indexer
	scheduling     *schedulingapi.Informers
	recorder       record.EventRecorder
	gates          features.Gates
	workloadWrites objcache.Writes[*schedulingv1beta1.Workload]
	podGroupWrites objcache.Writes[*schedulingv1beta1.PodGroup]
	locks          objcache.KeyedMutex
}

// NewReconciler returns a Reconciler.
func NewReconciler(o Options) *Reconciler {
	r := &Reconciler{client: o.Client, sets: o.StatefulSets, pods: o.Pods, podIndex: o.PodIndexer, scheduling: o.Scheduling, recorder: o.Recorder, gates: o.Gates}
	sched := o.Scheduling.Scheduling()
	// Neither can fail: an index of the same name is kept, and adding to a
	// running informer's cache indexes what it already holds.
	_ = addPodControllerIndex(o.PodIndexer)
	_ = addSchedulingIndexes(sched.Workloads().Informer(), sched.PodGroups().Informer())
	objcache.ForgetOnDelete(sched.Workloads().Informer(), &r.workloadWrites)
	objcache.ForgetOnDelete(sched.PodGroups().Informer(), &r.podGroupWrites)
	return r
}

// IntentFor returns the StatefulSet's spec.scheduling when the gate is on
// and it opted in; nil means "behave as upstream".
func (r *Reconciler) IntentFor(set *appsv1.StatefulSet) *intent.SchedulingConfiguration {
	if !r.gates.Workload() {
		return nil
	}
	cfg, err := intent.FromAnnotation(set.Annotations, intent.StatefulSetAnnotation)
	if err != nil {
		r.recorder.Eventf(set, corev1.EventTypeWarning, events.InvalidSchedulingIntent, "%v; pods are scheduled without a PodGroup", err)
		return nil
	}
	return cfg
}

// CreatedByController reports whether obj is one this controller created for
// set: the managed-by annotation and a controller ownerReference to its UID.
// Only such objects are ever mutated.
func CreatedByController(obj metav1.Object, set *appsv1.StatefulSet) bool {
	return obj.GetAnnotations()[ManagedByAnnotation] == ManagedByValue && metav1.IsControlledBy(obj, set)
}

// Resolve returns the PodGroup the StatefulSet's pods must join (nil: none,
// schedule as upstream), creating the Workload and PodGroup if the
// StatefulSet has no pods yet, and reconciling minCount on the objects this
// controller created. An error means pods must not be created or deleted now.
func (r *Reconciler) Resolve(ctx context.Context, set *appsv1.StatefulSet) (*schedulingv1beta1.PodGroup, error) {
	cfg := r.IntentFor(set)
	if cfg == nil {
		return nil, nil
	}
	if err := r.scheduling.Ready(); err != nil {
		// The Workload cannot be created: a failed creation as far as the
		// user can tell (KEP-6277's WorkloadCreationFailed event and
		// statefulset_workload_creation_errors_total), whether the informers
		// once synced and the create is refused, or this process started while
		// the API was not served and has no informers to create against.
		workloadCreationErrors.Inc()
		r.recorder.Eventf(set, corev1.EventTypeWarning, events.WorkloadCreationFailed, "Error creating the Workload: %v", err)
		if cfg.IsGang() {
			// Pods without their PodGroup would bypass the gang: wait (KEP-6277,
			// version skew). A basic StatefulSet runs as upstream meanwhile.
			return nil, err
		}
		return nil, nil
	}
	defer r.locks.Lock(types.NamespacedName{Namespace: set.Namespace, Name: set.Name})()
	hasPods, err := r.hasPods(set)
	if err != nil {
		return nil, err
	}
	parent := metav1.GetControllerOf(set)
	templateName := set.Annotations[GroupTemplateNameAnnotation]
	if templateName != "" && parent != nil {
		return r.resolveDelegated(ctx, set, parent, templateName, hasPods)
	}
	if templateName != "" {
		r.recorder.Eventf(set, corev1.EventTypeWarning, events.GroupTemplateNameIgnored,
			"annotation %s=%s needs a parent controller ownerReference to delegate; managing this StatefulSet's own Workload", GroupTemplateNameAnnotation, templateName)
	}
	return r.resolveManaged(ctx, set, cfg, hasPods)
}

// hasPods reports whether any pod, in any phase, is controlled by set. It
// asks the pod cache's controller index (the upstream StatefulSet
// controller's own), not a list of the namespace: it runs before every pod
// create and delete, and a scan would cost every pod of the namespace each
// time, O(pods) per pod.
func (r *Reconciler) hasPods(set *appsv1.StatefulSet) (bool, error) {
	key := controller.PodControllerIndexKey(set.Namespace, &metav1.OwnerReference{Kind: "StatefulSet", Name: set.Name, UID: set.UID})
	pods, err := r.podIndex.ByIndex(controller.PodControllerIndex, key)
	if err != nil {
		return false, err
	}
	return len(pods) > 0, nil
}

// addPodControllerIndex indexes the pod cache by controller reference, as
// the upstream controllers' controller.AddPodControllerIndexer does (the
// same name and keys, so the index is shared when they have added it first).
func addPodControllerIndex(pods cache.Indexer) error {
	if _, ok := pods.GetIndexers()[controller.PodControllerIndex]; ok {
		return nil
	}
	return pods.AddIndexers(cache.Indexers{controller.PodControllerIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, nil
		}
		return []string{controller.PodControllerIndexKey(pod.Namespace, metav1.GetControllerOf(pod))}, nil
	}})
}

func (r *Reconciler) resolveManaged(ctx context.Context, set *appsv1.StatefulSet, cfg *intent.SchedulingConfiguration, hasPods bool) (*schedulingv1beta1.PodGroup, error) {
	ref := schedulingv1beta1.TypedLocalObjectReference{APIGroup: appsv1.GroupName, Kind: "StatefulSet", Name: set.Name}
	candidates, err := r.workloadsReferencing(set.Namespace, ref)
	if err != nil {
		return nil, err
	}
	// A Workload controlled by another StatefulSet of this name (a previous
	// incarnation being garbage-collected) is not ours to use.
	var ws []*schedulingv1beta1.Workload
	for _, w := range candidates {
		if c := metav1.GetControllerOf(w); c != nil && c.Kind == "StatefulSet" && c.UID != set.UID {
			continue
		}
		ws = append(ws, w)
	}
	var w *schedulingv1beta1.Workload
	switch len(ws) {
	case 0:
		if hasPods {
			return nil, nil // discover only once pods exist
		}
		if w, err = r.createWorkload(ctx, set, cfg); err != nil {
			return nil, err
		}
	case 1:
		w = ws[0]
	default:
		r.recorder.Eventf(set, corev1.EventTypeWarning, events.AmbiguousWorkload,
			"%d Workloads name this StatefulSet in spec.controllerRef (%s); creating and changing nothing, pods are scheduled without a PodGroup", len(ws), names(ws))
		return nil, nil
	}
	if n := len(w.Spec.PodGroupTemplates); n != 1 {
		r.recorder.Eventf(set, corev1.EventTypeWarning, events.UnusableWorkload,
			"Workload %s has %d podGroupTemplates, want exactly 1; ignoring it, pods are scheduled without a PodGroup", w.Name, n)
		return nil, nil
	}
	ownWorkload := CreatedByController(w, set)
	if ownWorkload {
		if w, err = r.syncWorkloadMinCount(ctx, set, w); err != nil {
			return nil, err
		}
	}
	return r.resolvePodGroup(ctx, set, w, w.Spec.PodGroupTemplates[0].Name, ownWorkload, hasPods, nil, "")
}

// resolveDelegated uses the parent's Workload template; it never creates a
// Workload, and falls back (no PodGroup) with an event when the parent's
// Workload or template cannot be resolved unambiguously.
func (r *Reconciler) resolveDelegated(ctx context.Context, set *appsv1.StatefulSet, parent *metav1.OwnerReference, templateName string, hasPods bool) (*schedulingv1beta1.PodGroup, error) {
	gv, _ := schema.ParseGroupVersion(parent.APIVersion)
	ref := schedulingv1beta1.TypedLocalObjectReference{APIGroup: gv.Group, Kind: parent.Kind, Name: parent.Name}
	ws, err := r.workloadsReferencing(set.Namespace, ref)
	if err != nil {
		return nil, err
	}
	if len(ws) != 1 {
		r.recorder.Eventf(set, corev1.EventTypeWarning, events.UnresolvedParentWorkload,
			"found %d Workloads of parent %s %s (want 1); not creating a Workload of its own, pods are scheduled without a PodGroup", len(ws), parent.Kind, parent.Name)
		return nil, nil
	}
	w := ws[0]
	if FindPodGroupTemplate(w, templateName) == nil {
		r.recorder.Eventf(set, corev1.EventTypeWarning, events.UnresolvedParentWorkload,
			"parent Workload %s has no podGroupTemplate %q; pods are scheduled without a PodGroup", w.Name, templateName)
		return nil, nil
	}
	return r.resolvePodGroup(ctx, set, w, templateName, false, hasPods, ptr.To(set.UID), set.Annotations[ParentCompositePodGroupAnnotation])
}

// resolvePodGroup discovers (or, without pods, creates) the PodGroup of
// template in w, and syncs its minCount from the template when this
// controller created it. A parent's template is shared by its children, so
// delegated discovery also requires the controller ownerReference (onlyOwner).
func (r *Reconciler) resolvePodGroup(ctx context.Context, set *appsv1.StatefulSet, w *schedulingv1beta1.Workload, template string, ownWorkload, hasPods bool, onlyOwner *types.UID, parentComposite string) (*schedulingv1beta1.PodGroup, error) {
	pgs, err := r.podGroupsReferencing(set.Namespace, w.Name, template, onlyOwner)
	if err != nil {
		return nil, err
	}
	var pg *schedulingv1beta1.PodGroup
	switch len(pgs) {
	case 0:
		if hasPods {
			return nil, nil
		}
		desired, err := BuildPodGroup(set, w, template, ownWorkload, r.gates.DRAWorkloadResourceClaims())
		if err != nil {
			return nil, err
		}
		if err := r.setLive(ctx, set); err != nil {
			return nil, err
		}
		if parentComposite != "" {
			desired.Spec.ParentCompositePodGroupName = ptr.To(parentComposite)
		}
		start := time.Now()
		pg, err = r.client.SchedulingV1beta1().PodGroups(set.Namespace).Create(ctx, desired, metav1.CreateOptions{})
		observeCreate("PodGroup", start, err)
		if err != nil {
			// Counted with the Workload's failures: the metric's SLI is
			// "StatefulSets with spec.scheduling are not getting their
			// objects", and a gang without its PodGroup creates no pod.
			workloadCreationErrors.Inc()
			r.recorder.Eventf(set, corev1.EventTypeWarning, events.WorkloadCreationFailed, "Error creating PodGroup %s: %v", desired.Name, err)
			return nil, err
		}
		r.podGroupWrites.Store(types.NamespacedName{Namespace: pg.Namespace, Name: pg.Name}, pg)
		r.recorder.Eventf(set, corev1.EventTypeNormal, events.PodGroupCreated, "Created PodGroup %s from template %s of Workload %s", pg.Name, template, w.Name)
		crashpoint.Reached(crashpoint.StatefulSetAfterPodGroupCreate, set.Namespace)
		return pg, nil
	case 1:
		pg = pgs[0]
	default:
		r.recorder.Eventf(set, corev1.EventTypeWarning, events.AmbiguousPodGroup,
			"%d PodGroups reference template %s of Workload %s; multiple PodGroups per StatefulSet are not supported, pods are scheduled without a PodGroup", len(pgs), template, w.Name)
		return nil, nil
	}
	if !CreatedByController(pg, set) {
		return pg, nil // used as-is
	}
	want := templateMinCount(w, template)
	if g := pg.Spec.SchedulingPolicy.Gang; want != nil && g != nil && g.MinCount != *want {
		if err := r.setLive(ctx, set); err != nil {
			return nil, err
		}
		updated := pg.DeepCopy()
		updated.Spec.SchedulingPolicy.Gang.MinCount = *want
		if pg, err = r.client.SchedulingV1beta1().PodGroups(set.Namespace).Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return nil, fmt.Errorf("updating minCount of PodGroup %s/%s to %d: %w", updated.Namespace, updated.Name, *want, err)
		}
		r.podGroupWrites.Store(types.NamespacedName{Namespace: pg.Namespace, Name: pg.Name}, pg)
	}
	return pg, nil
}

func (r *Reconciler) createWorkload(ctx context.Context, set *appsv1.StatefulSet, cfg *intent.SchedulingConfiguration) (*schedulingv1beta1.Workload, error) {
	desired, err := BuildWorkload(set, cfg)
	if err == nil && !r.gates.DRAWorkloadResourceClaims() {
		// Gate off: no PodGroup-level claims anywhere (the apiserver would
		// drop them too); pods keep their own per-pod claims.
		for i := range desired.Spec.PodGroupTemplates {
			desired.Spec.PodGroupTemplates[i].ResourceClaims = nil
		}
	}
	if err == nil {
		if err := r.setLive(ctx, set); err != nil {
			return nil, err
		}
		start := time.Now()
		var created *schedulingv1beta1.Workload
		created, err = r.client.SchedulingV1beta1().Workloads(set.Namespace).Create(ctx, desired, metav1.CreateOptions{})
		observeCreate("Workload", start, err)
		if err == nil {
			r.workloadWrites.Store(types.NamespacedName{Namespace: created.Namespace, Name: created.Name}, created)
			r.recorder.Eventf(set, corev1.EventTypeNormal, events.WorkloadCreated, "Created Workload %s", created.Name)
			crashpoint.Reached(crashpoint.StatefulSetAfterWorkloadCreate, set.Namespace)
			return created, nil
		}
	}
	workloadCreationErrors.Inc()
	r.recorder.Eventf(set, corev1.EventTypeWarning, events.WorkloadCreationFailed, "Error creating the Workload: %v", err)
	return nil, err
}

// setLive guards every Workload and PodGroup write: the StatefulSet, read
// from the apiserver, must still be this one and not be terminating (see
// ownerguard).
func (r *Reconciler) setLive(ctx context.Context, set *appsv1.StatefulSet) error {
	return ownerguard.Check(ctx, "StatefulSet", set, r.client.AppsV1().StatefulSets(set.Namespace).Get)
}

// syncWorkloadMinCount sets the template's gang minCount to replicas (clamped).
func (r *Reconciler) syncWorkloadMinCount(ctx context.Context, set *appsv1.StatefulSet, w *schedulingv1beta1.Workload) (*schedulingv1beta1.Workload, error) {
	g := w.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang
	want := ResolvedMinCount(set.Spec.Replicas)
	if g == nil || g.MinCount == want {
		return w, nil
	}
	if err := r.setLive(ctx, set); err != nil {
		return nil, err
	}
	updated := w.DeepCopy()
	updated.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount = want
	updated, err := r.client.SchedulingV1beta1().Workloads(set.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("updating minCount of Workload %s/%s to %d: %w", w.Namespace, w.Name, want, err)
	}
	r.workloadWrites.Store(types.NamespacedName{Namespace: updated.Namespace, Name: updated.Name}, updated)
	crashpoint.Reached(crashpoint.StatefulSetBetweenMinCountUpdates, set.Namespace)
	return updated, nil
}

// workloadsReferencing returns the Workloads whose spec.controllerRef is
// ref, from the informer's index plus this process's own recent writes.
func (r *Reconciler) workloadsReferencing(namespace string, ref schedulingv1beta1.TypedLocalObjectReference) ([]*schedulingv1beta1.Workload, error) {
	inf := r.scheduling.Scheduling().Workloads()
	indexed, err := byIndex[*schedulingv1beta1.Workload](inf.Informer(), workloadsByControllerRef, controllerRefKey(namespace, ref))
	if err != nil {
		return nil, err
	}
	cached := func(name string) (*schedulingv1beta1.Workload, bool) {
		w, err := inf.Lister().Workloads(namespace).Get(name)
		return w, err == nil
	}
	var out []*schedulingv1beta1.Workload
	for _, w := range freshest(indexed, r.workloadWrites.Pending(namespace), cached, &r.workloadWrites) {
		c := w.Spec.ControllerRef
		if w.DeletionTimestamp == nil && c != nil && c.APIGroup == ref.APIGroup && c.Kind == ref.Kind && c.Name == ref.Name {
			out = append(out, w)
		}
	}
	return out, nil
}

// podGroupsReferencing returns the PodGroups whose spec.workloadRef is
// {workload, template} (and, when onlyOwner is set, controlled by that UID),
// from the informer's index plus this process's own recent writes.
func (r *Reconciler) podGroupsReferencing(namespace, workload, template string, onlyOwner *types.UID) ([]*schedulingv1beta1.PodGroup, error) {
	inf := r.scheduling.Scheduling().PodGroups()
	indexed, err := byIndex[*schedulingv1beta1.PodGroup](inf.Informer(), podGroupsByWorkloadRef, workloadRefKey(namespace, workload, template))
	if err != nil {
		return nil, err
	}
	cached := func(name string) (*schedulingv1beta1.PodGroup, bool) {
		pg, err := inf.Lister().PodGroups(namespace).Get(name)
		return pg, err == nil
	}
	var out []*schedulingv1beta1.PodGroup
	for _, pg := range freshest(indexed, r.podGroupWrites.Pending(namespace), cached, &r.podGroupWrites) {
		ref := pg.Spec.WorkloadRef
		if pg.DeletionTimestamp != nil || ref == nil || ref.WorkloadName != workload || ref.TemplateName != template {
			continue
		}
		if onlyOwner != nil {
			if c := metav1.GetControllerOf(pg); c == nil || c.UID != *onlyOwner {
				continue
			}
		}
		out = append(out, pg)
	}
	return out, nil
}

func names(ws []*schedulingv1beta1.Workload) string {
	s := ""
	for i, w := range ws {
		if i > 0 {
			s += ", "
		}
		s += w.Name
	}
	return s
}
