package deployment

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"

	"github.com/workload-aware/apps-harness/controllers/events"
)

// DeletePrunedPodGroups deletes the PodGroups of d's Workload whose
// ReplicaSet is gone: KEP-6276, "If explicit deletion is missed (e.g.,
// crash), owner-reference GC removes the PodGroup when the ReplicaSet is
// pruned". The garbage collector alone cannot: the PodGroup's non-controller
// ownerReference to the Workload, which lives on, keeps it (an object is
// collected only once all its owners are gone), and the collector merely
// drops the dangling ReplicaSet reference. So the ReplicaSet side does what
// the KEP expects of the collector, with its own identity (the one the KEP
// lets delete PodGroups) and a UID precondition.
//
// A PodGroup qualifies when it has a non-controller ownerReference to d's
// Workload (only this controller sets one) and either a controller
// ownerReference to a ReplicaSet the apiserver no longer has under that UID,
// or none at all (the collector has dropped it). A PodGroup that another
// actor made and this controller discovered carries no such reference, so
// it is never touched.
//
// replicaSets is the ReplicaSet cache: a ReplicaSet found there under the
// PodGroup's owner UID is alive without asking the apiserver, so a sync
// costs no request unless a ReplicaSet is missing from the cache.
func (r *Reconciler) DeletePrunedPodGroups(ctx context.Context, d *appsv1.Deployment, replicaSets appslisters.ReplicaSetLister) error {
	if r.IntentFor(d) == nil || r.scheduling.Ready() != nil {
		return nil
	}
	w, err := r.scheduling.Scheduling().Workloads().Lister().Workloads(d.Namespace).Get(WorkloadName(d))
	if err != nil || !metav1.IsControlledBy(w, d) {
		return nil // EnsureWorkload reports a missing or foreign Workload
	}
	pgs, err := r.scheduling.Scheduling().PodGroups().Lister().PodGroups(d.Namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	var errs []error
	for _, pg := range pgs {
		if pg.DeletionTimestamp != nil || !ownedBy(pg, w) {
			continue
		}
		pruned, err := r.replicaSetPruned(ctx, pg, replicaSets)
		if err != nil || !pruned {
			errs = append(errs, err)
			continue
		}
		err = r.replicaSetClient.SchedulingV1beta1().PodGroups(pg.Namespace).Delete(ctx, pg.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pg.UID}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue // gone, or another object under the name now
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r.recorder.Eventf(d, corev1.EventTypeNormal, events.PodGroupDeleted, "Deleted PodGroup %s, left by a pruned ReplicaSet", pg.Name)
	}
	return errors.Join(errs...)
}

// ownedBy says whether pg has a non-controller ownerReference to w.
func ownedBy(pg *schedulingv1beta1.PodGroup, w *schedulingv1beta1.Workload) bool {
	for _, ref := range pg.OwnerReferences {
		if ref.UID == w.UID && ref.Kind == "Workload" && (ref.Controller == nil || !*ref.Controller) {
			return true
		}
	}
	return false
}

// replicaSetPruned says whether pg's ReplicaSet is gone: one the cache
// lacks is asked of the apiserver (the informer may not have seen a new
// ReplicaSet yet).
func (r *Reconciler) replicaSetPruned(ctx context.Context, pg *schedulingv1beta1.PodGroup, replicaSets appslisters.ReplicaSetLister) (bool, error) {
	ref := metav1.GetControllerOf(pg)
	if ref == nil {
		return true, nil // the collector dropped the reference to a deleted owner
	}
	if ref.Kind != "ReplicaSet" || ref.APIVersion != appsv1.SchemeGroupVersion.String() {
		return false, nil
	}
	if cached, err := replicaSets.ReplicaSets(pg.Namespace).Get(ref.Name); err == nil && cached.UID == ref.UID {
		return false, nil
	}
	rs, err := r.replicaSetClient.AppsV1().ReplicaSets(pg.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return rs.UID != ref.UID, nil
}
