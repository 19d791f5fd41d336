package localcluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/workload-aware/apps-harness/pkg/kwoknodes"
)

// The faults the Fault specs make on this cluster: a node stopped (kwok
// stops acting for it: the node lifecycle controller marks it NotReady) and
// started again, a process killed and started again, several restarted
// together.
func TestFaults(t *testing.T) {
	cfg := binariesOrSkip(t)
	// A short grace period: the node turns NotReady in seconds, not 50.
	cfg.Components = map[Component]ComponentConfig{ControllerManager: {ExtraArgs: map[string]string{"node-monitor-grace-period": "8s"}}}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	client := adminClient(t, c)
	node := kwoknodes.NodeName(0, 0, 0)

	t0 := time.Now()
	if err := c.StopNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	var last string
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				last = string(cond.Status)
				return cond.Status != corev1.ConditionTrue, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("stopped node %s still Ready (%s) after 2 min: %v", node, last, err)
	}
	t.Logf("stopped node NotReady after %s", time.Since(t0).Round(time.Second))
	other, err := client.CoreV1().Nodes().Get(ctx, kwoknodes.NodeName(0, 0, 1), metav1.GetOptions{})
	if err != nil || !kwoknodes.Schedulable(other) {
		t.Fatalf("the other node is not Ready while one is stopped: %v %v", other.Status.Conditions, err)
	}
	t0 = time.Now()
	if err := c.StartNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Logf("node Ready again %s after StartNode", time.Since(t0).Round(time.Second))

	before := c.PIDs()
	if err := c.Kill(ctx, Scheduler); err != nil {
		t.Fatal(err)
	}
	if err := c.RestartTogether(ctx, Etcd, APIServer); err != nil {
		t.Fatal(err)
	}
	after := c.PIDs()
	// The three are new processes; kwok (the nodes) ran on. (Others may be
	// new too: kube-controller-manager can exit while the apiserver is away,
	// and is started again.)
	for _, name := range []Component{Scheduler, Etcd, APIServer} {
		if after[name] == before[name] {
			t.Errorf("%s kept pid %d", name, before[name])
		}
	}
	if after[Kwok] != before[Kwok] {
		t.Errorf("kwok restarted (pid %d -> %d), though it was not named", before[Kwok], after[Kwok])
	}
	if _, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("the API after etcd and kube-apiserver restarted together: %v", err)
	}
}
