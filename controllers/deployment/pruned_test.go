package deployment

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
)

// TestKEP6276PrunedReplicaSetPodGroup covers D-I9 at unit level: a PodGroup
// whose ReplicaSet was pruned before its explicit delete is deleted (the
// collector keeps it, as its Workload owner lives), and nothing else is.
func TestKEP6276PrunedReplicaSetPodGroup(t *testing.T) {
	// setup: the pruned revision's PodGroup (missed delete) and the live one's.
	setup := func(t *testing.T) (*ktEnv, *appsv1.Deployment, *schedulingv1beta1.PodGroup, *schedulingv1beta1.PodGroup) {
		e := ktNewEnv(t, ktEnvOptions{})
		d, _, old := ktGangSetup(t, e)
		missed, err := e.r.EnsurePodGroup(e.Ctx, old)
		if err != nil {
			t.Fatal(err)
		}
		live, err := e.r.EnsurePodGroup(e.Ctx, e.replicaSet(d, "6f7a8b9c0", 3))
		if err != nil {
			t.Fatal(err)
		}
		e.WaitPodGroupCached(missed.Name, missed.ResourceVersion)
		e.WaitPodGroupCached(live.Name, live.ResourceVersion)
		if err := e.Client.AppsV1().ReplicaSets(ktNS).Delete(e.Ctx, old.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.Client.ClearActions()
		return e, d, missed, live
	}
	deletes := func(e *ktEnv) []clienttesting.DeleteActionImpl {
		var out []clienttesting.DeleteActionImpl
		for _, a := range e.Client.Actions() {
			if da, ok := a.(clienttesting.DeleteActionImpl); ok && a.GetResource().Resource == "podgroups" {
				out = append(out, da)
			}
		}
		return out
	}
	expectDeleted := func(t *testing.T, e *ktEnv, missed, live *schedulingv1beta1.PodGroup) {
		t.Helper()
		got := deletes(e)
		if len(got) != 1 || got[0].Name != missed.Name {
			t.Fatalf("podgroup deletes = %+v, want one of %s", got, missed.Name)
		}
		if pre := got[0].DeleteOptions.Preconditions; pre == nil || pre.UID == nil || *pre.UID != missed.UID {
			t.Errorf("delete preconditions = %+v, want UID %s", pre, missed.UID)
		}
		if _, err := e.Client.SchedulingV1beta1().PodGroups(ktNS).Get(e.Ctx, live.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("the live revision's PodGroup: %v", err)
		}
	}

	t.Run("D-I9_controller_reference_to_a_deleted_replicaset", func(t *testing.T) {
		e, d, missed, live := setup(t)
		if err := e.r.DeletePrunedPodGroups(e.Ctx, d, e.apps.Apps().V1().ReplicaSets().Lister()); err != nil {
			t.Fatal(err)
		}
		expectDeleted(t, e, missed, live)
	})
	t.Run("D-I9_controller_reference_dropped_by_the_collector", func(t *testing.T) {
		e, d, missed, live := setup(t)
		stripped := missed.DeepCopy()
		var refs []metav1.OwnerReference
		for _, ref := range stripped.OwnerReferences {
			if ref.Kind != "ReplicaSet" {
				refs = append(refs, ref)
			}
		}
		stripped.OwnerReferences = refs
		e.UpdateBehindTheBack(stripped)
		if err := e.r.DeletePrunedPodGroups(e.Ctx, d, e.apps.Apps().V1().ReplicaSets().Lister()); err != nil {
			t.Fatal(err)
		}
		expectDeleted(t, e, missed, live)
	})
	t.Run("D-I9_a_denied_delete_is_returned_for_a_retry", func(t *testing.T) {
		e, d, missed, _ := setup(t)
		e.Fail("delete", "podgroups", apierrors.NewForbidden(schedulingv1beta1.Resource("podgroups"), missed.Name, nil))
		if err := e.r.DeletePrunedPodGroups(e.Ctx, d, e.apps.Apps().V1().ReplicaSets().Lister()); !apierrors.IsForbidden(err) {
			t.Fatalf("DeletePrunedPodGroups = %v, want the Forbidden error back", err)
		}
	})
	t.Run("D-I9_nothing_while_every_replicaset_lives", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d, _, rs := ktGangSetup(t, e)
		ktCachedPodGroup(t, e, rs)
		e.Client.ClearActions()
		if err := e.r.DeletePrunedPodGroups(e.Ctx, d, e.apps.Apps().V1().ReplicaSets().Lister()); err != nil {
			t.Fatal(err)
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("writes = %v, want none", got)
		}
		// With the ReplicaSet in the cache, a sync asks the apiserver nothing.
		if err := e.apps.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(rs); err != nil {
			t.Fatal(err)
		}
		e.Client.ClearActions()
		if err := e.r.DeletePrunedPodGroups(e.Ctx, d, e.apps.Apps().V1().ReplicaSets().Lister()); err != nil {
			t.Fatal(err)
		}
		if got := e.Client.Actions(); len(got) != 0 {
			t.Errorf("requests = %v, want none while the cache has the ReplicaSet", got)
		}
	})
	t.Run("D-I9_a_podgroup_without_the_workload_reference_is_not_ours", func(t *testing.T) {
		e, d, missed, _ := setup(t)
		foreign := missed.DeepCopy()
		foreign.OwnerReferences = nil
		e.UpdateBehindTheBack(foreign)
		if err := e.r.DeletePrunedPodGroups(e.Ctx, d, e.apps.Apps().V1().ReplicaSets().Lister()); err != nil {
			t.Fatal(err)
		}
		if got := e.SchedulingWrites(); !reflect.DeepEqual(got, []string(nil)) {
			t.Errorf("writes = %v, want none", got)
		}
	})
}
