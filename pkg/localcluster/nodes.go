package localcluster

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

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
