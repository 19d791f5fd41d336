package deployment

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// D-P5's long outage: the upstream Deployment controller drops a key after
// 15 failed syncs, so a Deployment whose ReplicaSet hook failed for longer
// than that must be handed back to it once the reference's worker has
// written the Workload, or it would not converge for hours.
func TestStalledDeploymentIsHandedBackOnceItsWorkloadIsWritten(t *testing.T) {
	e := ktNewEnv(t, ktEnvOptions{notServed: true})
	d := ktDeployment(t, "web", ptr.To[int32](3), ktGang(nil))
	e.storeDeployment(d)
	key := d.Namespace + "/" + d.Name
	hooked := e.r.DeploymentControllerClient(e.Client).AppsV1().ReplicaSets(ktNS)

	// The API is not served: the upstream sync's ReplicaSet create fails, and
	// the Deployment is queued for the reference's own worker.
	if _, err := hooked.Create(e.Ctx, ktReplicaSet(d, "h", 3), metav1.CreateOptions{}); err == nil {
		t.Fatal("ReplicaSet created while the scheduling API is not served")
	}
	if n := e.workers.deployQueue.Len(); n != 1 {
		t.Fatalf("worker queue length after the failed hook = %d, want 1 (the Deployment)", n)
	}
	got, _ := e.workers.deployQueue.Get()
	e.workers.deployQueue.Done(got)
	if got != key {
		t.Fatalf("queued %q, want %q", got, key)
	}
	// The worker fails too while the API is not served, and hands nothing back.
	if err := e.workers.syncDeployment(e.Ctx, key); err == nil {
		t.Fatal("worker sync succeeded while the scheduling API is not served")
	}
	if hb := e.handedBackKeys(); len(hb) != 0 {
		t.Fatalf("handed back %v before the Workload was written", hb)
	}

	// Served again: the worker writes the Workload and hands the Deployment
	// back, once.
	e.StartScheduling()
	if err := e.workers.syncDeployment(e.Ctx, key); err != nil {
		t.Fatalf("worker sync once served: %v", err)
	}
	if e.Count("create", "workloads") != 1 {
		t.Fatalf("Workload creates = %d, want 1", e.Count("create", "workloads"))
	}
	if hb := e.handedBackKeys(); !slices.Equal(hb, []string{key}) {
		t.Fatalf("handed back %v, want [%s]", hb, key)
	}
	if err := e.workers.syncDeployment(e.Ctx, key); err != nil {
		t.Fatalf("second worker sync: %v", err)
	}
	if hb := e.handedBackKeys(); len(hb) != 1 {
		t.Errorf("handed back %v after a second sync; want it once", hb)
	}
}

// A Deployment whose hook never failed is never handed back.
func TestDeploymentIsNotHandedBackWithoutAStall(t *testing.T) {
	e := ktNewEnv(t, ktEnvOptions{})
	d := ktDeployment(t, "web", ptr.To[int32](3), ktGang(nil))
	e.storeDeployment(d)
	if _, err := e.r.DeploymentControllerClient(e.Client).AppsV1().ReplicaSets(ktNS).Create(e.Ctx, ktReplicaSet(d, "h", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.workers.syncDeployment(e.Ctx, d.Namespace+"/"+d.Name); err != nil {
		t.Fatal(err)
	}
	if hb := e.handedBackKeys(); len(hb) != 0 {
		t.Errorf("handed back %v without a failed hook", hb)
	}
}
