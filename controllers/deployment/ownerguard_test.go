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
		e.addDeployment(d)
		e.gateOn.Store(true) // the controller side comes back while the Deployment terminates
		e.client.ClearActions()
		if err := e.workers.syncDeployment(e.ctx, ktNS+"/doomed"); err != nil {
			t.Fatalf("sync of a terminating Deployment = %v, want nil (nothing to retry)", err)
		}
		if got := e.writes(); len(got) != 0 {
			t.Fatalf("writes for a terminating Deployment: %v", got)
		}
	})

	t.Run("stale informer entry for a deleted Deployment creates no Workload", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d := ktDeployment(t, "gone", ptr.To[int32](2), ktGang(nil))
		if err := e.deploys.Add(d); err != nil { // in the cache only: deleted from the API
			t.Fatal(err)
		}
		e.client.ClearActions()
		if err := e.workers.syncDeployment(e.ctx, ktNS+"/gone"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.r.EnsureWorkload(e.ctx, d); !errors.Is(err, ownerguard.ErrOwnerGone) {
			t.Fatalf("EnsureWorkload of a deleted Deployment = %v, want ErrOwnerGone", err)
		}
		if got := e.writes(); len(got) != 0 {
			t.Fatalf("writes for a deleted Deployment: %v", got)
		}
	})

	t.Run("a Deployment replaced under the same name gets nothing from the old cache entry", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		old := ktDeployment(t, "reborn", ptr.To[int32](2), ktGang(nil))
		e.addDeployment(old)
		reborn := old.DeepCopy()
		reborn.UID = types.UID("deploy-uid-reborn-2")
		e.storeInAPI(appsv1.SchemeGroupVersion.WithResource("deployments"), reborn) // the cache still has the old one
		e.client.ClearActions()
		if _, err := e.r.EnsureWorkload(e.ctx, old); !errors.Is(err, ownerguard.ErrOwnerGone) {
			t.Fatalf("EnsureWorkload for a replaced Deployment = %v, want ErrOwnerGone", err)
		}
		if got := e.writes(); len(got) != 0 {
			t.Fatalf("writes for a replaced Deployment: %v", got)
		}
	})

	t.Run("the Deployment controller's ReplicaSet writes still pass for a terminating Deployment", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d := ktDeployment(t, "doomed", ptr.To[int32](2), ktGang(nil))
		terminating(d)
		e.addDeployment(d)
		e.client.ClearActions()
		rs := ktReplicaSet(d, "5d8f9c7b6", 2)
		if _, err := e.r.DeploymentControllerClient(e.client).AppsV1().ReplicaSets(ktNS).Create(e.ctx, rs, metav1.CreateOptions{}); err != nil {
			t.Fatalf("ReplicaSet create of a terminating Deployment failed: %v", err)
		}
		if got, want := e.writes(), []string{"create replicasets"}; len(got) != 1 || got[0] != want[0] {
			t.Fatalf("writes = %v, want only %v", got, want)
		}
	})

	t.Run("no PodGroup for a ReplicaSet deleted behind a stale cache, nor for a terminating one", func(t *testing.T) {
		e := ktNewEnv(t, ktEnvOptions{})
		d := ktDeployment(t, "web", ptr.To[int32](2), ktGang(nil))
		e.addDeployment(d)
		e.ensureWorkloadCached(d)
		stale := ktReplicaSet(d, "5d8f9c7b6", 2) // in the worker's cache, not in the API
		if err := e.apps.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(stale); err != nil {
			t.Fatal(err)
		}
		e.client.ClearActions()
		key, _ := cache.MetaNamespaceKeyFunc(stale)
		if err := e.workers.syncReplicaSet(e.ctx, key); err != nil {
			t.Fatal(err)
		}
		if _, err := e.r.EnsurePodGroup(e.ctx, stale); !errors.Is(err, ownerguard.ErrOwnerGone) {
			t.Fatalf("EnsurePodGroup of a deleted ReplicaSet = %v, want ErrOwnerGone", err)
		}
		dying := e.replicaSet(d, "77f8c9d4b", 2)
		dying.DeletionTimestamp = ptr.To(metav1.Now())
		e.storeInAPI(appsv1.SchemeGroupVersion.WithResource("replicasets"), dying)
		if _, err := e.r.EnsurePodGroup(e.ctx, dying); !errors.Is(err, ownerguard.ErrOwnerGone) {
			t.Fatalf("EnsurePodGroup of a terminating ReplicaSet = %v, want ErrOwnerGone", err)
		}
		// A pod of such a ReplicaSet is not created ungrouped either: the create fails and is retried.
		inner := &ktPodControl{client: e.client}
		if err := e.r.PodControl(inner).CreatePods(e.ctx, ktNS, &stale.Spec.Template, stale, ktRSControllerRef(stale)); err == nil {
			t.Fatal("a pod of a deleted gang ReplicaSet was created without its PodGroup")
		}
		if got := e.writes(); len(got) != 0 {
			t.Fatalf("writes for ReplicaSets going away: %v", got)
		}
	})
}
