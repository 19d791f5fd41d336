package localcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/workload-aware/apps-harness/pkg/kwoknodes"
)

// createNodes registers the topology's nodes.
func (c *Cluster) createNodes(ctx context.Context) error {
	client, err := c.adminClient()
	if err != nil {
		return err
	}
	nodes := c.cfg.Nodes.Nodes()
	for i := range nodes {
		if _, err := client.CoreV1().Nodes().Create(ctx, &nodes[i], metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node %s: %w", nodes[i].Name, err)
		}
	}
	// DRA: the DeviceClass and one ResourceSlice per node, as a driver would
	// publish them (resource.k8s.io/v1 must be served).
	slices := c.cfg.Nodes.ResourceSlices()
	if len(slices) == 0 {
		return nil
	}
	if _, err := client.ResourceV1().DeviceClasses().Create(ctx, kwoknodes.DeviceClass(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating DeviceClass %s (is resource.k8s.io/v1 served?): %w", kwoknodes.DeviceClassName, err)
	}
	for i := range slices {
		if _, err := client.ResourceV1().ResourceSlices().Create(ctx, &slices[i], metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ResourceSlice %s: %w", slices[i].Name, err)
		}
	}
	return nil
}

// waitNodesSchedulable waits until kwok has made every node Ready and the node
// lifecycle controller has lifted the not-ready taint, so the scheduler will
// place pods on them.
func (c *Cluster) waitNodesSchedulable(ctx context.Context) error {
	client, err := c.adminClient()
	if err != nil {
		return err
	}
	nodes := c.cfg.Nodes.Nodes()
	t0 := time.Now()
	var notReady []string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, c.cfg.ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kwoknodes.ManagedLabel + "=true"})
		if err != nil {
			return false, nil
		}
		notReady = notReady[:0]
		for _, n := range list.Items {
			if !kwoknodes.Schedulable(&n) {
				notReady = append(notReady, n.Name)
			}
		}
		return len(list.Items) == len(nodes) && len(notReady) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("nodes not Ready and untainted after %s: %v; last lines of %s:\n%s",
			c.cfg.ReadyTimeout, notReady, c.paths.log(Kwok), tail(c.paths.log(Kwok), 15))
	}
	c.cfg.Logf("%d nodes Ready in %.2fs", len(nodes), time.Since(t0).Seconds())
	return nil
}

// A node stopped and started again, for the suite's node faults. kwok plays
// the kubelet of every node, and kwok instances share nodes through the
// nodes' Leases (kube-node-lease/<node>): one acts for a node (heartbeats,
// runs its pods, finishes their deletion) only while it holds its Lease.
// StopNode gives the Lease to another holder, for an hour, without renewing
// it: kwok stops acting for the node, as a kubelet stops when its machine
// goes off. The node lifecycle controller sees no renewal, marks the Node
// NotReady after its grace period, taints it unreachable and evicts its pods
// per their tolerations; they stay Terminating, as on a real dead node.
// StartNode deletes that Lease: kwok takes the node back within its renew
// interval, makes it Ready and finishes the deletions.
const (
	stoppedNodeHolder = "was-harness-stopped-node"
	stoppedNodeLease  = int32(3600)
)

// StopNode stops node name (see above) and returns at once; the Node turns
// NotReady after the node lifecycle controller's grace period.
func (c *Cluster) StopNode(ctx context.Context, name string) error {
	client, err := c.adminClient()
	if err != nil {
		return err
	}
	if _, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("StopNode %s: %w", name, err)
	}
	leases := client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		// The renew time stays as kwok left it: the node lifecycle controller
		// counts a renewal as a sign of life.
		holder, duration := stoppedNodeHolder, stoppedNodeLease
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &holder, &duration
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("StopNode %s: taking its Lease from kwok: %w", name, err)
	}
	c.cfg.Logf("node %s stopped (kwok no longer holds its Lease)", name)
	return nil
}

// StartNode starts node name again and returns once it is Ready and
// untainted (schedulable).
func (c *Cluster) StartNode(ctx context.Context, name string) error {
	client, err := c.adminClient()
	if err != nil {
		return err
	}
	t0 := time.Now()
	leases := client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("StartNode %s: %w", name, err)
	case l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == stoppedNodeHolder:
		if err := leases.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &l.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("StartNode %s: giving its Lease back to kwok: %w", name, err)
		}
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, c.cfg.ReadyTimeout+time.Minute, true, func(ctx context.Context) (bool, error) {
		// kwok holds the Lease again and has renewed it since...
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = "its Lease: " + err.Error()
			return false, nil
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == stoppedNodeHolder || l.Spec.RenewTime == nil || l.Spec.RenewTime.Time.Before(t0.Truncate(time.Second)) {
			last = fmt.Sprintf("its Lease is not renewed by kwok yet: holder %v, renewed %v", l.Spec.HolderIdentity, l.Spec.RenewTime)
			return false, nil
		}
		// ...and the Node is Ready and untainted.
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		if !kwoknodes.Schedulable(n) {
			last = fmt.Sprintf("conditions %v, taints %v", n.Status.Conditions, n.Spec.Taints)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("StartNode %s: not Ready and untainted after %s: %v; last seen: %s", name, time.Since(t0).Round(time.Second), err, last)
	}
	c.cfg.Logf("node %s started again, Ready in %.1fs", name, time.Since(t0).Seconds())
	return nil
}
