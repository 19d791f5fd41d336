package apps

import (
	"slices"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Matchers over State.

// AtMinCount: exactly one Workload, at minCount want, and exactly one
// PodGroup, live, at minCount want.
func AtMinCount(want int32) gomega.OmegaMatcher {
	return MinCounts(want, want)
}

// MinCounts: exactly one Workload, whose template is at minCount workload,
// and exactly one PodGroup, live, at minCount podGroup (they differ while an
// update is under way or denied).
func MinCounts(workload, podGroup int32) gomega.OmegaMatcher {
	return gomega.SatisfyAll(
		gomega.HaveField("Workloads", gomega.ConsistOf(gomega.HaveField("MinCount", workload))),
		gomega.HaveField("PodGroups", gomega.ConsistOf(gomega.And(gomega.HaveField("MinCount", podGroup), gomega.HaveField("Terminating", false)))),
	)
}

// Gang: AtMinCount(minCount), and n bound pods that all name a PodGroup.
func Gang(minCount int32, n int) gomega.OmegaMatcher {
	return gomega.SatisfyAll(
		AtMinCount(minCount),
		gomega.WithTransform(State.Grouped, gomega.Equal(n)),
		gomega.WithTransform(State.Bound, gomega.Equal(n)),
		gomega.HaveField("Pods", gomega.HaveLen(n)),
	)
}

// NoObjects: no Workload and no PodGroup.
func NoObjects() gomega.OmegaMatcher {
	return gomega.SatisfyAll(
		gomega.HaveField("Workloads", gomega.BeEmpty()),
		gomega.HaveField("PodGroups", gomega.BeEmpty()),
	)
}

// UngroupedOnly: NoObjects, and n bound pods that name no PodGroup.
func UngroupedOnly(n int) gomega.OmegaMatcher {
	return gomega.SatisfyAll(
		NoObjects(),
		Mixed(n, n),
	)
}

// Mixed: n bound pods, ungrouped of which name no PodGroup.
func Mixed(n, ungrouped int) gomega.OmegaMatcher {
	return gomega.SatisfyAll(
		gomega.HaveField("Pods", gomega.HaveLen(n)),
		gomega.WithTransform(State.Bound, gomega.Equal(n)),
		gomega.WithTransform(func(s State) int { return len(s.Ungrouped()) }, gomega.Equal(ungrouped)),
	)
}

// Comparisons of two States.

// ExpectSameObjects asserts the Workloads and PodGroups of now are those of
// before (same UIDs): discovered and updated in place, never recreated.
func ExpectSameObjects(now, before State) {
	ginkgo.GinkgoHelper()
	gomega.Expect(uids(now.Workloads)).To(gomega.Equal(uids(before.Workloads)), "the Workload was recreated or added: before %s, now %s", before, now)
	gomega.Expect(uids(now.PodGroups)).To(gomega.Equal(uids(before.PodGroups)), "the PodGroup was recreated or added: before %s, now %s", before, now)
}

func uids(objs []Object) []types.UID {
	out := []types.UID{}
	for _, o := range objs {
		out = append(out, o.UID)
	}
	slices.Sort(out)
	return out
}

// ExpectPodsUndisturbed asserts every pod of before is still a live pod of
// now: same UID, same node, and still Running if it was.
func ExpectPodsUndisturbed(now, before State) {
	ginkgo.GinkgoHelper()
	byUID := map[types.UID]Member{}
	for _, p := range now.Pods {
		byUID[p.UID] = p
	}
	for _, was := range before.Pods {
		p, ok := byUID[was.UID]
		gomega.Expect(ok).To(gomega.BeTrue(), "pod %s (uid %s) was replaced, deleted or is terminating; now %s", was.Name, was.UID, now)
		gomega.Expect(p.Node).To(gomega.Equal(was.Node), "pod %s moved from %s", was.Name, was.Node)
		if was.Phase == corev1.PodRunning {
			gomega.Expect(p.Phase).To(gomega.Equal(corev1.PodRunning), "pod %s stopped running", was.Name)
		}
	}
}
