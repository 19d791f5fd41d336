package scheduling

import (
	"context"
	"sort"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/pkg/kwoknodes"
)

// capacity is what the specs size their gangs from, so they hold on any
// cluster whose schedulable nodes are alike, not only on the default topology.
type capacity struct {
	nodes                          int
	minAllocatable, maxAllocatable resource.Quantity
	// perPod is just over half the largest node's CPU: one pod per node.
	perPod resource.Quantity
}

func schedulableNodes(ctx context.Context, f *framework.Framework) []corev1.Node {
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

func measureCapacity(ctx context.Context, f *framework.Framework) capacity {
	nodes := schedulableNodes(ctx, f)
	c := capacity{nodes: len(nodes)}
	for i, n := range nodes {
		cpu := n.Status.Allocatable[corev1.ResourceCPU]
		if i == 0 || cpu.Cmp(c.minAllocatable) < 0 {
			c.minAllocatable = cpu.DeepCopy()
		}
		if i == 0 || cpu.Cmp(c.maxAllocatable) > 0 {
			c.maxAllocatable = cpu.DeepCopy()
		}
	}
	c.perPod = *resource.NewMilliQuantity(c.maxAllocatable.MilliValue()/2+100, resource.DecimalSI)
	if c.perPod.Cmp(c.minAllocatable) > 0 {
		ginkgo.Skip("needs schedulable nodes of similar CPU (one pod of just over half the largest must fit on the smallest); allocatable ranges " +
			c.minAllocatable.String() + ".." + c.maxAllocatable.String())
	}
	return c
}

// nodesByLabel maps each value of key to its schedulable nodes.
func nodesByLabel(ctx context.Context, f *framework.Framework, key string) map[string][]string {
	out := map[string][]string{}
	for _, n := range schedulableNodes(ctx, f) {
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

func anyDomainHasNodes(domains map[string][]string, n int) bool {
	for _, nodes := range domains {
		if len(nodes) >= n {
			return true
		}
	}
	return false
}

func domainOf(domains map[string][]string, node string) string {
	for d, nodes := range domains {
		for _, n := range nodes {
			if n == node {
				return d
			}
		}
	}
	return "<no domain>"
}

func distinctNodes(s framework.PodBindingState) map[string]bool {
	out := map[string]bool{}
	for _, n := range s.NodeOf {
		out[n] = true
	}
	return out
}
