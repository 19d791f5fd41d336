package deployment

import (
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/controllers/ownerguard"
)

// TestOwnerGoingAway reproduces the interleavings in which the reference once
// wrote for an owner the garbage collector was removing (issue 11: a
// Workload created for a foreground-deleted Deployment when the gate came
// back): every path must write nothing for an owner that is terminating,
// deleted behind a stale cache, or replaced by a new object of its name.
func TestOwnerGoingAway(t *testing.T) {
	terminating := func(d *appsv1.Deployment) {
		d.DeletionTimestamp = ptr.To(metav1.Now())
		d.Finalizers = []string{metav1.FinalizerDeleteDependents}
	}

	t.Run("gate-on resync against a foreground-deleted Deployment creates no Workload", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{gateOff: true})
		d := ktDeployment(t, "doomed", ptr.To[int32](2), ktGang(nil))
		terminating(d)
		e.storeDeployment(d)
		e.gateOn.Store(true) // the controller side comes back while the Deployment terminates
		e.Client.ClearActions()
		if err := e.workers.syncDeployment(e.Ctx, ktNS+"/doomed"); err != nil {
			t.Fatalf("sync of a terminating Deployment = %v, want nil (nothing to retry)", err)
		}
		if got := e.Writes(); len(got) != 0 {
			t.Fatalf("writes for a terminating Deployment: %v", got)
		}
	})

	t.Run("stale informer entry for a deleted Deployment creates no Workload", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d := ktDeployment(t, "gone", ptr.To[int32](2), ktGang(nil))
		if err := e.deploys.Add(d); err != nil { // in the cache only: deleted from the API
			t.Fatal(err)
		}
		e.Client.ClearActions()
		if err := e.workers.syncDeployment(e.Ctx, ktNS+"/gone"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.r.EnsureWorkload(e.Ctx, d); !errors.Is(err, ownerguard.ErrOwnerGone) {
			t.Fatalf("EnsureWorkload of a deleted Deployment = %v, want ErrOwnerGone", err)
		}
		if got := e.Writes(); len(got) != 0 {
			t.Fatalf("writes for a deleted Deployment: %v", got)
		}
	})

	t.Run("a Deployment replaced under the same name gets nothing from the old cache entry", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		old := ktDeployment(t, "reborn", ptr.To[int32](2), ktGang(nil))
		e.storeDeployment(old)
		reborn := old.DeepCopy()
		reborn.UID = types.UID("deploy-uid-reborn-2")
		e.Store(reborn) // the cache still has the old one
		e.Client.ClearActions()
		if _, err := e.r.EnsureWorkload(e.Ctx, old); !errors.Is(err, ownerguard.ErrOwnerGone) {
			t.Fatalf("EnsureWorkload for a replaced Deployment = %v, want ErrOwnerGone", err)
		}
		if got := e.Writes(); len(got) != 0 {
			t.Fatalf("writes for a replaced Deployment: %v", got)
		}
	})

	t.Run("the Deployment controller's ReplicaSet writes still pass for a terminating Deployment", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d := ktDeployment(t, "doomed", ptr.To[int32](2), ktGang(nil))
		terminating(d)
		e.storeDeployment(d)
		e.Client.ClearActions()
		rs := ktReplicaSet(d, "5d8f9c7b6", 2)
		if _, err := e.r.DeploymentControllerClient(e.Client).AppsV1().ReplicaSets(ktNS).Create(e.Ctx, rs, metav1.CreateOptions{}); err != nil {
			t.Fatalf("ReplicaSet create of a terminating Deployment failed: %v", err)
		}
		if got, want := e.Writes(), []string{"create replicasets"}; len(got) != 1 || got[0] != want[0] {
			t.Fatalf("writes = %v, want only %v", got, want)
		}
	})

	t.Run("no PodGroup for a ReplicaSet deleted behind a stale cache, nor for a terminating one", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d := ktDeployment(t, "web", ptr.To[int32](2), ktGang(nil))
		e.storeDeployment(d)
		e.ensureWorkloadCached(d)
		stale := ktReplicaSet(d, "5d8f9c7b6", 2) // in the worker's cache, not in the API
		if err := e.apps.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(stale); err != nil {
			t.Fatal(err)
		}
		e.Client.ClearActions()
		key, _ := cache.MetaNamespaceKeyFunc(stale)
		if err := e.workers.syncReplicaSet(e.Ctx, key); err != nil {
			t.Fatal(err)
		}
		if _, err := e.r.EnsurePodGroup(e.Ctx, stale); !errors.Is(err, ownerguard.ErrOwnerGone) {
			t.Fatalf("EnsurePodGroup of a deleted ReplicaSet = %v, want ErrOwnerGone", err)
		}
		dying := e.replicaSet(d, "77f8c9d4b", 2)
		dying.DeletionTimestamp = ptr.To(metav1.Now())
		e.Store(dying)
		if _, err := e.r.EnsurePodGroup(e.Ctx, dying); !errors.Is(err, ownerguard.ErrOwnerGone) {
			t.Fatalf("EnsurePodGroup of a terminating ReplicaSet = %v, want ErrOwnerGone", err)
		}
		// A pod of such a ReplicaSet is not created ungrouped either: the create fails and is retried.
		inner := &ktPodControl{client: e.Client}
		if err := e.r.PodControl(inner).CreatePods(e.Ctx, ktNS, &stale.Spec.Template, stale, ktRSControllerRef(stale)); err == nil {
			t.Fatal("a pod of a deleted gang ReplicaSet was created without its PodGroup")
		}
		if got := e.Writes(); len(got) != 0 {
			t.Fatalf("writes for ReplicaSets going away: %v", got)
		}
	})
}

// TestOrphanedPodGroupNotAdopted: a Deployment deleted with orphaning and
// recreated with the same pod template gets the orphaned ReplicaSet back
// (upstream adoption), and with it a PodGroup of that ReplicaSet's name that
// references the old Deployment's Workload. It must be neither used nor
// changed (KEP-6276).
func TestOrphanedPodGroupNotAdopted(t *testing.T) {
	e := ktNewEnv(t, ktEnvOptions{})
	d, w, rs := ktGangSetup(t, e)
	orphan, err := BuildPodGroup(w, rs, PodGroupName(d.Name, rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]), true)
	if err != nil {
		t.Fatal(err)
	}
	orphan.Spec.WorkloadRef.WorkloadName = "web-of-the-deleted-deployment"
	e.Seed(orphan)
	e.Client.ClearActions()
	if pg, err := e.r.EnsurePodGroup(e.Ctx, rs); err == nil {
		t.Fatalf("EnsurePodGroup used PodGroup %s of another Workload", pg.Name)
	}
	if got := e.Writes(); len(got) != 0 {
		t.Fatalf("writes to an orphaned PodGroup: %v", got)
	}
}
