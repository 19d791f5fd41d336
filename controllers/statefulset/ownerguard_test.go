package statefulset

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/controllers/ownerguard"
)

// TestOwnerGoingAway: no Workload or PodGroup is created or updated for a
// StatefulSet that is terminating, deleted behind a stale cache, or replaced
// by a new object of its name; its pods can still be deleted.
func TestOwnerGoingAway(t *testing.T) {
	t.Run("gate-on resync and pod create against a terminating StatefulSet write nothing", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{gateOff: true})
		set := stSet(t, "doomed", 3, stGang())
		set.DeletionTimestamp = ptr.To(metav1.Now())
		set.Finalizers = []string{metav1.FinalizerDeleteDependents}
		e.storeSet(set)
		e.gateOn.Store(true)
		e.Client.ClearActions()
		key, _ := cache.MetaNamespaceKeyFunc(set)
		if err := (&SyncWorker{r: e.r}).sync(e.Ctx, key); err != nil {
			t.Fatal(err)
		}
		if _, err := e.createPod(stPod(set, 0, stRevision1)); !errors.Is(err, ownerguard.ErrOwnerGone) {
			t.Fatalf("pod create of a terminating gang StatefulSet = %v, want ErrOwnerGone (no ungrouped pod)", err)
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Fatalf("scheduling writes for a terminating StatefulSet: %v", got)
		}
	})

	t.Run("stale informer entry for a deleted StatefulSet creates nothing", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "gone", 3, stGang())
		if err := e.sets.Add(set); err != nil { // in the cache only
			t.Fatal(err)
		}
		e.Client.ClearActions()
		key, _ := cache.MetaNamespaceKeyFunc(set)
		if err := (&SyncWorker{r: e.r}).sync(e.Ctx, key); err != nil {
			t.Fatal(err)
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Fatalf("scheduling writes for a deleted StatefulSet: %v", got)
		}
	})

	t.Run("a StatefulSet replaced under the same name gets nothing from the old cache entry", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		old := stSet(t, "reborn", 3, stGang())
		e.storeSet(old)
		reborn := old.DeepCopy()
		reborn.UID = types.UID("sts-uid-reborn-2")
		e.Store(reborn)
		e.Client.ClearActions()
		if _, err := e.r.Resolve(e.Ctx, old); !errors.Is(err, ownerguard.ErrOwnerGone) {
			t.Fatalf("Resolve for a replaced StatefulSet = %v, want ErrOwnerGone", err)
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Fatalf("scheduling writes for a replaced StatefulSet: %v", got)
		}
	})

	t.Run("minCount is not synced for a terminating StatefulSet, and its pods are still deleted", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "shrinking", 3, stGang())
		e.storeSet(set)
		pods := e.createAll(set, 3, stRevision1)
		e.SyncCaches()
		dying := set.DeepCopy()
		dying.Spec.Replicas = ptr.To[int32](1)
		dying.DeletionTimestamp = ptr.To(metav1.Now())
		e.storeSet(dying)
		e.Client.ClearActions()
		if err := e.deletePod(pods[2].Name); err != nil {
			t.Fatalf("deleting a pod of a terminating StatefulSet: %v", err)
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Fatalf("scheduling writes for a terminating StatefulSet: %v", got)
		}
	})
}
