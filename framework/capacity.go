package framework

import (
	"context"
	"sort"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workload-aware/apps-harness/pkg/kwoknodes"
)

// Capacity is what specs size their gangs from, so they hold on any cluster
// whose schedulable nodes are alike, not only on the default topology.
type Capacity struct {
	Nodes                          int
	MinAllocatable, MaxAllocatable resource.Quantity
	// OnePerNode is just over half the largest node's CPU: a pod of this size
	// fits on every node, and no node holds two.
	OnePerNode resource.Quantity
}

// SchedulableNodes lists the nodes the scheduler will place pods on.
func SchedulableNodes(ctx context.Context, f *Framework) []corev1.Node {
	list, err := f.ClientSet.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing nodes")
	var out []corev1.Node
	for _, n := range list.Items {
		if kwoknodes.Schedulable(&n) {
			out = append(out, n)
		}
	}
	gomega.Expect(out).NotTo(gomega.BeEmpty(), "the cluster has no schedulable node")
	return out
}

// MeasureCapacity reads the schedulable nodes' CPU for a spec that relies on
// the cluster's whole capacity (a gang that must not fit, a preemptor that
// fits only by evicting): it skips the spec on a cluster whose nodes differ
// too much for one-pod-per-node sizing. Such a claim holds only while no
// other spec's pods take capacity, so it fails in a spec that is not Serial;
// a spec that only sizes its pods relative to one node uses NodeSize.
func MeasureCapacity(ctx context.Context, f *Framework) Capacity {
	ginkgo.GinkgoHelper()
	if !AloneOnCluster() {
		ginkgo.Fail("MeasureCapacity in a spec that is not Serial: specs in other Ginkgo processes take capacity at any time; " +
			"label the spec framework.Serial, or use NodeSize if it only sizes pods relative to one node")
	}
	waitForReleasedCapacity(ctx, f)
	return measureCapacity(ctx, f)
}

// waitForReleasedCapacity waits until no pod that is on its way out (its own
// deletion or its namespace's under way) still holds a node: the scheduler
// counts a terminating pod's requests until it is gone, so a spec that sizes
// a gang to the whole cluster would find a node less than it measured. A
// spec's own namespace is waited for in its cleanup, but not every namespace
// is: the calibration probe's, a cleanup cut short by an interrupt, or pods a
// vendor's cluster is deleting for reasons of its own. It allows what a
// spec's cleanup allows its pods (Timeouts.Cleanup): a pod still there after
// that is held by something (a finalizer), and the failure names it.
func waitForReleasedCapacity(ctx context.Context, f *Framework) {
	ginkgo.GinkgoHelper()
	start := time.Now()
	gomega.Eventually(ctx, func(g gomega.Gomega) {
		pods, err := f.ClientSet.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred(), "listing pods")
		namespaces, err := f.ClientSet.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(gomega.HaveOccurred(), "listing namespaces")
		g.Expect(podsLeavingNodes(pods.Items, namespaces.Items)).To(gomega.BeEmpty(), "pods of earlier specs still hold nodes while they terminate")
	}).WithTimeout(f.Timeouts.Cleanup).WithPolling(f.Timeouts.Poll).Should(gomega.Succeed(),
		"the cluster's capacity is not free: pods on their way out still hold nodes (a pod or namespace finalizer that never clears?)")
	if waited := time.Since(start); waited > 2*time.Second {
		ginkgo.GinkgoWriter.Printf("waited %s for earlier specs' terminating pods to leave the nodes before measuring capacity\n", waited.Round(100*time.Millisecond))
	}
}

// podsLeavingNodes names the pods that are bound, not finished, and being
// deleted (themselves or through their namespace): capacity the scheduler
// still counts as taken, though nobody will use it again.
func podsLeavingNodes(pods []corev1.Pod, namespaces []corev1.Namespace) []string {
	terminating := map[string]bool{}
	for _, ns := range namespaces {
		if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
			terminating[ns.Name] = true
		}
	}
	var out []string
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.DeletionTimestamp != nil || terminating[p.Namespace] {
			out = append(out, p.Namespace+"/"+p.Name+"@"+p.Spec.NodeName)
		}
	}
	sort.Strings(out)
	return out
}

// NodeSize reads the same figures as MeasureCapacity for a spec that runs
// beside others and only sizes its pods relative to one node (for example
// 3/8 of a node, so that four pods need two nodes of a domain).
func NodeSize(ctx context.Context, f *Framework) Capacity {
	return measureCapacity(ctx, f)
}

func measureCapacity(ctx context.Context, f *Framework) Capacity {
	nodes := SchedulableNodes(ctx, f)
	c := Capacity{Nodes: len(nodes)}
	for i, n := range nodes {
		cpu := n.Status.Allocatable[corev1.ResourceCPU]
		if i == 0 || cpu.Cmp(c.MinAllocatable) < 0 {
			c.MinAllocatable = cpu.DeepCopy()
		}
		if i == 0 || cpu.Cmp(c.MaxAllocatable) > 0 {
			c.MaxAllocatable = cpu.DeepCopy()
		}
	}
	c.OnePerNode = *resource.NewMilliQuantity(c.MaxAllocatable.MilliValue()/2+100, resource.DecimalSI)
	if c.OnePerNode.Cmp(c.MinAllocatable) > 0 {
		ginkgo.Skip("needs schedulable nodes of similar CPU (one pod of just over half the largest must fit on the smallest); allocatable ranges " +
			c.MinAllocatable.String() + ".." + c.MaxAllocatable.String())
	}
	return c
}

// Fraction returns num/den of the smallest node's CPU, as a quantity string.
func (c Capacity) Fraction(num, den int64) string {
	return resource.NewMilliQuantity(c.MinAllocatable.MilliValue()*num/den, resource.DecimalSI).String()
}

// NodesByLabel maps each value of key to its schedulable nodes; it skips the
// spec when no node has the label.
func NodesByLabel(ctx context.Context, f *Framework, key string) map[string][]string {
	out := map[string][]string{}
	for _, n := range SchedulableNodes(ctx, f) {
		if v, ok := n.Labels[key]; ok {
			out[v] = append(out[v], n.Name)
		}
	}
	if len(out) == 0 {
		ginkgo.Skip("no schedulable node carries the topology label " + key + " (set --topology-key)")
	}
	for _, names := range out {
		sort.Strings(names)
	}
	return out
}

// AnyDomainHasNodes reports whether some domain has at least n nodes.
func AnyDomainHasNodes(domains map[string][]string, n int) bool {
	for _, nodes := range domains {
		if len(nodes) >= n {
			return true
		}
	}
	return false
}

// DomainOf returns the domain of node.
func DomainOf(domains map[string][]string, node string) string {
	for d, nodes := range domains {
		for _, n := range nodes {
			if n == node {
				return d
			}
		}
	}
	return "<no domain>"
}

// DistinctNodes returns the nodes the pods are bound to.
func DistinctNodes(s PodBindingState) map[string]bool {
	out := map[string]bool{}
	for _, n := range s.NodeOf {
		out[n] = true
	}
	return out
}
