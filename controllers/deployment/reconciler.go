// Package deployment layers KEP-6276 onto the upstream Deployment and
// ReplicaSet controllers of k8s.io/kubernetes, which run unchanged:
//
//   - Deployment side: the Deployment controller creates and scales
//     ReplicaSets only through its clientset. A wrapped clientset ensures the
//     Deployment's Workload (get-or-create, template minCount reconciled)
//     before every ReplicaSet create or update it sends.
//   - ReplicaSet side: the ReplicaSet controller creates pods only through its
//     PodControlInterface. A wrapped PodControl ensures the ReplicaSet's
//     PodGroup before every pod, sets the pod's spec.schedulingGroup, and adds
//     a non-controller ownerReference to the PodGroup; the ReplicaSet's stored
//     template is never touched.
//   - Two small work queues finish what those hooks cannot see: PodGroup
//     deletion at zero replicas, minCount changes without pod creation, and
//     recreation of objects deleted behind the controllers' backs.
//
// With the WorkloadWithDeployment gate off every hook passes straight through.
package deployment

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/intent"
	"github.com/workload-aware/apps-harness/controllers/crashpoint"
	"github.com/workload-aware/apps-harness/controllers/events"
	"github.com/workload-aware/apps-harness/controllers/features"
	"github.com/workload-aware/apps-harness/controllers/objcache"
	"github.com/workload-aware/apps-harness/controllers/ownerguard"
	"github.com/workload-aware/apps-harness/controllers/schedulingapi"
)

// DefaultGates reads the process's feature gates, with WorkloadWithDeployment
// as the controller's own.
func DefaultGates() features.Gates { return features.ProcessGates(features.WorkloadWithDeployment) }

// Reconciler owns the scheduling objects of Deployments and their ReplicaSets.
// Each side writes with its own controller's client, so RBAC grants each
// exactly the verbs KEP-6276 lists.
type Reconciler struct {
	deploymentClient kubernetes.Interface
	replicaSetClient kubernetes.Interface
	deployments      appslisters.DeploymentLister
	scheduling       *schedulingapi.Informers
	recorder         record.EventRecorder
	gates            features.Gates

	workloadWrites                   objcache.Writes[*schedulingv1beta1.Workload]
	podGroupWrites                   objcache.Writes[*schedulingv1beta1.PodGroup]
	podGroupDeletes                  objcache.Deletions
	deploymentLocks, replicaSetLocks objcache.KeyedMutex

	stalled  stalled
	handBack func(*appsv1.Deployment)
}

// Options wires a Reconciler.
type Options struct {
	DeploymentClient, ReplicaSetClient kubernetes.Interface
	Deployments                        appslisters.DeploymentLister
	Scheduling                         *schedulingapi.Informers
	Recorder                           record.EventRecorder
	Gates                              features.Gates
	// HandBack makes the upstream Deployment controller sync d again
	// (handback.Tap.Resync on its informer). Nil: never handed back.
	HandBack func(d *appsv1.Deployment)
}

// NewReconciler returns a Reconciler.
func NewReconciler(o Options) *Reconciler {
	r := &Reconciler{
		deploymentClient: o.DeploymentClient, replicaSetClient: o.ReplicaSetClient,
		deployments: o.Deployments, scheduling: o.Scheduling, recorder: o.Recorder, gates: o.Gates,
		handBack: o.HandBack,
	}
	sched := o.Scheduling.Scheduling()
	objcache.ForgetOnDelete(sched.Workloads().Informer(), &r.workloadWrites)
	objcache.ForgetOnDelete(sched.PodGroups().Informer(), &r.podGroupWrites)
	objcache.ForgetDeletionsOnDelete[*schedulingv1beta1.PodGroup](sched.PodGroups().Informer(), &r.podGroupDeletes)
	return r
}

// IntentFor returns the Deployment's scheduling intent when the controller
// gate is on and the Deployment opted in; nil means "behave as upstream". A
// malformed intent (admission would have refused it) is reported as an event
// and treated as absent.
func (r *Reconciler) IntentFor(d *appsv1.Deployment) *intent.DeploymentSchedulingConfiguration {
	if !r.gates.Workload() {
		return nil
	}
	cfg, err := intent.FromAnnotations(d.Annotations)
	if err != nil {
		r.recorder.Eventf(d, corev1.EventTypeWarning, events.InvalidSchedulingIntent, "%v; no Workload or PodGroup is reconciled", err)
		return nil
	}
	if cfg != nil && d.Spec.Template.Spec.SchedulingGroup != nil {
		// The pod template brings its own PodGroup (admission forbids both).
		return nil
	}
	return cfg
}

// EnsureWorkload gets or creates the Deployment's Workload and reconciles its
// template's gang minCount to the resolved value. It returns nil, nil for a
// Deployment that did not opt in.
func (r *Reconciler) EnsureWorkload(ctx context.Context, d *appsv1.Deployment) (*schedulingv1beta1.Workload, error) {
	cfg := r.IntentFor(d)
	if cfg == nil {
		return nil, nil
	}
	if err := r.scheduling.Ready(); err != nil {
		// Counted and reported like a refused create: a process started while
		// the API is not served has no informers, and would otherwise retry
		// silently (KEP-6276's version skew: retries with backoff, visible).
		creationErrors.WithLabelValues("Workload").Inc()
		r.recorder.Eventf(d, corev1.EventTypeWarning, events.WorkloadCreationFailed, "Error creating the Workload: %v", err)
		return nil, err
	}
	defer r.deploymentLocks.Lock(types.NamespacedName{Namespace: d.Namespace, Name: d.Name})()
	desired, err := BuildWorkload(d, cfg)
	if err != nil {
		r.recorder.Eventf(d, corev1.EventTypeWarning, events.WorkloadCreationFailed, "compiling spec.scheduling into a Workload: %v", err)
		return nil, err
	}
	client := r.deploymentClient.SchedulingV1beta1().Workloads(d.Namespace)
	key := types.NamespacedName{Namespace: d.Namespace, Name: desired.Name}
	existing, err := r.scheduling.Scheduling().Workloads().Lister().Workloads(d.Namespace).Get(desired.Name)
	if existing, found := r.workloadWrites.Freshest(key, existing, err == nil); found {
		return r.reconcileWorkload(ctx, d, desired, existing)
	}
	if apierrors.IsNotFound(err) {
		if err := r.deploymentLive(ctx, d); err != nil {
			return nil, err
		}
		start := time.Now()
		created, err := client.Create(ctx, desired, metav1.CreateOptions{})
		observeCreate("Workload", start, err)
		switch {
		case err == nil:
			r.workloadWrites.Store(key, created)
			r.recorder.Eventf(d, corev1.EventTypeNormal, events.WorkloadCreated, "Created Workload %s", created.Name)
			crashpoint.Reached(crashpoint.DeploymentAfterWorkloadCreate, d.Namespace)
			return created, nil
		case apierrors.IsAlreadyExists(err):
			// Our cache is behind; the object is there. Read it once.
			existing, err = client.Get(ctx, desired.Name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
		default:
			r.recorder.Eventf(d, corev1.EventTypeWarning, events.WorkloadCreationFailed, "Error creating Workload %s: %v", desired.Name, err)
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	return r.reconcileWorkload(ctx, d, desired, existing)
}

// reconcileWorkload checks an existing Workload is ours and brings its
// template's gang minCount to the desired value (the one mutable field).
func (r *Reconciler) reconcileWorkload(ctx context.Context, d *appsv1.Deployment, desired, existing *schedulingv1beta1.Workload) (*schedulingv1beta1.Workload, error) {
	if !metav1.IsControlledBy(existing, d) {
		r.recorder.Eventf(d, corev1.EventTypeWarning, events.WorkloadNameCollision, "Workload %s exists but is not controlled by this Deployment; not using it", existing.Name)
		return nil, fmt.Errorf("workload %s/%s is not controlled by deployment %s", existing.Namespace, existing.Name, d.Name)
	}
	want, have := TemplateMinCount(desired), TemplateMinCount(existing)
	if want == nil || have == nil || *want == *have {
		return existing, nil
	}
	if err := r.deploymentLive(ctx, d); err != nil {
		return nil, err
	}
	// Only gang.minCount is mutable; the rest of the template was fixed at creation.
	updated := existing.DeepCopy()
	updated.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount = *want
	updated, err := r.deploymentClient.SchedulingV1beta1().Workloads(d.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	r.workloadWrites.Store(types.NamespacedName{Namespace: d.Namespace, Name: updated.Name}, updated)
	crashpoint.Reached(crashpoint.DeploymentBetweenMinCountUpdates, d.Namespace)
	return updated, nil
}

// deploymentLive guards every Workload write: the Deployment, read from the
// apiserver with the Deployment side's client, must still be this one and
// not be terminating (see ownerguard).
func (r *Reconciler) deploymentLive(ctx context.Context, d *appsv1.Deployment) error {
	return ownerguard.Check(ctx, "Deployment", d, r.deploymentClient.AppsV1().Deployments(d.Namespace).Get)
}

// replicaSetLive guards every PodGroup write: the ReplicaSet, read from the
// apiserver with the ReplicaSet side's client, must still be this one and not
// be terminating, and neither may its Deployment be (the cached copy is
// enough there: the ReplicaSet controller's identity does not read
// Deployments, and a deleted Deployment's ReplicaSet is collected anyway).
func (r *Reconciler) replicaSetLive(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet) error {
	if err := ownerguard.Terminating("Deployment", d); err != nil {
		return err
	}
	return ownerguard.Check(ctx, "ReplicaSet", rs, r.replicaSetClient.AppsV1().ReplicaSets(rs.Namespace).Get)
}

// deploymentOf returns the Deployment controlling rs, from the cache.
func (r *Reconciler) deploymentOf(rs *appsv1.ReplicaSet) *appsv1.Deployment {
	ref := metav1.GetControllerOf(rs)
	if ref == nil || ref.Kind != "Deployment" || ref.APIVersion != appsv1.SchemeGroupVersion.String() {
		return nil
	}
	d, err := r.deployments.Deployments(rs.Namespace).Get(ref.Name)
	if err != nil || d.UID != ref.UID {
		return nil
	}
	return d
}

// EnsurePodGroup reconciles the ReplicaSet's PodGroup: absent at zero
// replicas, otherwise present with the Workload template's minCount. It
// returns the PodGroup pods must join, or nil when the ReplicaSet's pods are
// scheduled as upstream would (no intent, gate off, zero replicas).
func (r *Reconciler) EnsurePodGroup(ctx context.Context, rs *appsv1.ReplicaSet) (*schedulingv1beta1.PodGroup, error) {
	d := r.deploymentOf(rs)
	if d == nil || r.IntentFor(d) == nil {
		return nil, nil
	}
	if err := r.scheduling.Ready(); err != nil {
		return nil, err
	}
	// A ReplicaSet the Deployment adopted, rather than made, has no
	// pod-template-hash label (upstream's "RollingUpdateDeployment" and
	// rollover e2e specs adopt one). It is still one revision, and its own
	// name is what PodGroupName gives a ReplicaSet the Deployment made, so
	// it names the PodGroup. Refusing it instead blocked every pod deletion
	// of the adopted ReplicaSet, and so the rollout (make parity found it).
	name := rs.Name
	if hash := rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; hash != "" {
		name = PodGroupName(d.Name, hash)
	}
	key := types.NamespacedName{Namespace: rs.Namespace, Name: name}
	defer r.replicaSetLocks.Lock(key)()
	client := r.replicaSetClient.SchedulingV1beta1().PodGroups(rs.Namespace)
	existing := r.cachedPodGroup(key)

	if ptr.Deref(rs.Spec.Replicas, 1) == 0 {
		// Deleted once: the pod control asks again before each pod it
		// deletes, and the protection finalizer keeps the PodGroup (without a
		// deletionTimestamp in our cache for a while) until its pods are gone.
		if existing != nil && existing.DeletionTimestamp == nil && metav1.IsControlledBy(existing, rs) && !r.podGroupDeletes.Requested(key, existing.UID) {
			err := client.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &existing.UID}})
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, err
			}
			r.podGroupDeletes.Mark(key, existing.UID)
			r.podGroupWrites.Forget(key)
			r.recorder.Eventf(d, corev1.EventTypeNormal, events.PodGroupDeleted, "Deleted PodGroup %s of ReplicaSet %s at zero replicas", name, rs.Name)
		}
		return nil, nil
	}

	// Our own last Workload write when the informer has not caught up: the
	// Deployment side lowers the template's minCount just before it scales
	// the ReplicaSet down, and the quorum must follow before a pod goes.
	w, err := r.scheduling.Scheduling().Workloads().Lister().Workloads(d.Namespace).Get(WorkloadName(d))
	if fresh, ok := r.workloadWrites.Freshest(types.NamespacedName{Namespace: d.Namespace, Name: WorkloadName(d)}, w, err == nil); ok {
		w, err = fresh, nil
	}
	if err != nil {
		// The Deployment side creates it before the ReplicaSet exists; a
		// missing one is being (re)created. Retry rather than run ungrouped pods.
		return nil, fmt.Errorf("workload %s of deployment %s: %w", WorkloadName(d), d.Name, err)
	}
	if !metav1.IsControlledBy(w, d) {
		return nil, fmt.Errorf("workload %s/%s is not controlled by deployment %s", w.Namespace, w.Name, d.Name)
	}
	if existing != nil {
		return r.reconcilePodGroup(ctx, d, rs, w, existing)
	}

	desired, err := BuildPodGroup(w, rs, name, r.gates.DRAWorkloadResourceClaims())
	if err != nil {
		r.recorder.Eventf(d, corev1.EventTypeWarning, events.WorkloadCreationFailed, "Error building PodGroup %s: %v", name, err)
		return nil, err
	}
	if err := r.replicaSetLive(ctx, d, rs); err != nil {
		return nil, err
	}
	start := time.Now()
	created, err := client.Create(ctx, desired, metav1.CreateOptions{})
	observeCreate("PodGroup", start, err)
	if apierrors.IsAlreadyExists(err) {
		created, err = client.Get(ctx, name, metav1.GetOptions{})
		switch {
		case err != nil:
		case !metav1.IsControlledBy(created, rs):
			err = fmt.Errorf("podgroup %s/%s is not controlled by replicaset %s", rs.Namespace, name, rs.Name)
		case created.DeletionTimestamp != nil:
			err = fmt.Errorf("podgroup %s/%s is still being deleted; waiting to recreate it", rs.Namespace, name)
		default:
			err = r.ofWorkload(d, created, w)
		}
	} else if err != nil {
		r.recorder.Eventf(d, corev1.EventTypeWarning, events.WorkloadCreationFailed, "Error creating PodGroup %s: %v", name, err)
	} else {
		r.recorder.Eventf(d, corev1.EventTypeNormal, events.PodGroupCreated, "Created PodGroup %s for ReplicaSet %s", name, rs.Name)
		crashpoint.Reached(crashpoint.DeploymentAfterPodGroupCreate, rs.Namespace)
	}
	if err != nil {
		return nil, err
	}
	r.podGroupWrites.Store(key, created)
	return created, nil
}

// reconcilePodGroup checks that the ReplicaSet's existing PodGroup is its own
// and of the Deployment's Workload, and brings its gang minCount to the
// Workload template's.
func (r *Reconciler) reconcilePodGroup(ctx context.Context, d *appsv1.Deployment, rs *appsv1.ReplicaSet, w *schedulingv1beta1.Workload, existing *schedulingv1beta1.PodGroup) (*schedulingv1beta1.PodGroup, error) {
	name, key := existing.Name, types.NamespacedName{Namespace: existing.Namespace, Name: existing.Name}
	if existing.DeletionTimestamp != nil {
		return nil, fmt.Errorf("podgroup %s/%s is still being deleted; waiting to recreate it", rs.Namespace, name)
	}
	if !metav1.IsControlledBy(existing, rs) {
		r.recorder.Eventf(d, corev1.EventTypeWarning, events.PodGroupNameCollision, "PodGroup %s exists but is not controlled by ReplicaSet %s", name, rs.Name)
		return nil, fmt.Errorf("podgroup %s/%s is not controlled by replicaset %s", rs.Namespace, name, rs.Name)
	}
	if err := r.ofWorkload(d, existing, w); err != nil {
		return nil, err
	}
	want := TemplateMinCount(w)
	// A Deployment going to zero replicas has set its Workload to the
	// zero-replica minCount; this PodGroup is about to be deleted, so it
	// is not worth a write.
	goingToZero := ptr.Deref(d.Spec.Replicas, 1) == 0
	if g := existing.Spec.SchedulingPolicy.Gang; want != nil && g != nil && g.MinCount != *want && !goingToZero {
		if err := r.replicaSetLive(ctx, d, rs); err != nil {
			return nil, err
		}
		updated := existing.DeepCopy()
		updated.Spec.SchedulingPolicy.Gang.MinCount = *want
		updated, err := r.replicaSetClient.SchedulingV1beta1().PodGroups(rs.Namespace).Update(ctx, updated, metav1.UpdateOptions{})
		if err != nil {
			return nil, err
		}
		r.podGroupWrites.Store(key, updated)
		return updated, nil
	}
	return existing, nil
}

// ofWorkload refuses a PodGroup of the ReplicaSet that references another
// Workload than the Deployment's own. That happens when a Deployment deleted
// with orphaning is recreated under its name with the same pod template:
// upstream adopts the orphaned ReplicaSet, whose PodGroup still belongs to
// the old Deployment's Workload. KEP-6276: the new Deployment must not adopt
// it, so it is neither used nor changed, and the pods wait (with an event)
// rather than join it.
func (r *Reconciler) ofWorkload(d *appsv1.Deployment, pg *schedulingv1beta1.PodGroup, w *schedulingv1beta1.Workload) error {
	if ref := pg.Spec.WorkloadRef; ref != nil && ref.WorkloadName == w.Name {
		return nil
	}
	r.recorder.Eventf(d, corev1.EventTypeWarning, events.PodGroupNameCollision,
		"PodGroup %s references another Workload than this Deployment's %s (left by a Deployment deleted with orphaning?); not using or changing it", pg.Name, w.Name)
	return fmt.Errorf("podgroup %s/%s does not reference workload %s of deployment %s", pg.Namespace, pg.Name, w.Name, d.Name)
}

// cachedPodGroup returns the freshest PodGroup known: the informer's, or one
// this process wrote that the informer has not delivered yet.
func (r *Reconciler) cachedPodGroup(key types.NamespacedName) *schedulingv1beta1.PodGroup {
	fromInformer, err := r.scheduling.Scheduling().PodGroups().Lister().PodGroups(key.Namespace).Get(key.Name)
	pg, ok := r.podGroupWrites.Freshest(key, fromInformer, err == nil)
	if !ok {
		return nil
	}
	return pg
}

// podGroupUID returns the UID of the named PodGroup when it is controlled by
// the same object as the pod (its ReplicaSet): a PodGroup the pod template
// brought along is the user's, and pods get no ownerReference to it.
func (r *Reconciler) podGroupUID(namespace, name string, podController *metav1.OwnerReference) (types.UID, bool) {
	pg := r.cachedPodGroup(types.NamespacedName{Namespace: namespace, Name: name})
	if pg == nil || podController == nil {
		return "", false
	}
	if ref := metav1.GetControllerOf(pg); ref == nil || ref.UID != podController.UID {
		return "", false
	}
	return pg.UID, true
}

func logger(ctx context.Context) klog.Logger { return klog.FromContext(ctx) }
