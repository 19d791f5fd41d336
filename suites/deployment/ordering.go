package deployment

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/workload-aware/apps-harness/framework"
)

// Order is proved by etcd revision (framework.WriteHistory), never by when a
// poll happened to see something: KEP-6276, Scaling and HPA, "the Deployment
// controller first reconciles the Workload's PodGroupTemplate so its gang
// minCount reflects the resolved value ... It then scales the relevant
// ReplicaSets", and "The ReplicaSet controller reconciles each
// ReplicaSet-owned PodGroup before managing its pods ... The controller
// updates its quorum before creating additional pods."

var _ = ginkgo.Describe("Deployment scheduling write order", framework.KEP(6276),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment), func() {
		f := framework.New("deploy-order")

		ginkgo.It("raises the Workload template's minCount, then the PodGroup's, before creating the new pods on scale-up", framework.ID("D-I3", "D-U2"), func(ctx context.Context) {
			d := create(ctx, recreate(f, "up", 3, "100m").Obj(), gang(nil))
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 3)
			waitForGangState(ctx, f, d, 3, true)
			original := podUIDs(ctx, f, d)

			h := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource, framework.PodsResource)
			gomega.Expect(scale(ctx, f, d, 5)).To(gomega.Succeed())
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 5)
			wl := h.WaitFirst(ctx, "workloads", "the Workload template at minCount 5", framework.WithMinCount(5))
			pg := h.WaitFirst(ctx, "podgroups", "the PodGroup at minCount 5", framework.WithMinCount(5))
			created := newPodCreations(h, original)
			gomega.Expect(created).To(gomega.HaveLen(2), "two new pods for 3 -> 5:\n%s", h)
			ginkgo.GinkgoWriter.Printf("scale-up writes in revision order:\n%s", h)

			gomega.Expect(wl.Revision).To(gomega.BeNumerically("<", pg.Revision),
				"the PodGroup reached minCount 5 before the Workload template it inherits from:\n%s", h)
			// Not only raised once before: at 5 when each pod is created (a
			// quorum raised, then lowered again to the pods that exist, and
			// raised as they arrive, breaks the same sentence).
			for _, c := range created {
				expectMinCountAt(h, "workloads", wl, c, 5)
				expectMinCountAt(h, "podgroups", pg, c, 5)
			}
		})

		ginkgo.It("lowers the Workload template's minCount, then the PodGroup's, before deleting pods on scale-down", framework.ID("D-I3"), func(ctx context.Context) {
			d := create(ctx, recreate(f, "down", 4, "100m").Obj(), gang(nil))
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 4)
			waitForGangState(ctx, f, d, 4, true)

			h := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource, framework.PodsResource)
			gomega.Expect(scale(ctx, f, d, 2)).To(gomega.Succeed())
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 2)
			wl := h.WaitFirst(ctx, "workloads", "the Workload template at minCount 2", framework.WithMinCount(2))
			pg := h.WaitFirst(ctx, "podgroups", "the PodGroup at minCount 2", framework.WithMinCount(2))
			del := h.WaitFirst(ctx, "pods", "the first pod deletion", func(c framework.Change) bool { return c.Terminating })
			ginkgo.GinkgoWriter.Printf("scale-down writes in revision order:\n%s", h)

			gomega.Expect(wl.Revision).To(gomega.BeNumerically("<", pg.Revision),
				"the PodGroup reached minCount 2 before the Workload template it inherits from:\n%s", h)
			gomega.Expect(wl.Revision).To(gomega.BeNumerically("<", del.Revision),
				"pod %s was deleted before the Workload template's minCount was lowered to 2:\n%s", del.Name, h)
			gomega.Expect(pg.Revision).To(gomega.BeNumerically("<", del.Revision),
				"pod %s was deleted before the PodGroup's quorum was lowered to 2:\n%s", del.Name, h)
			expectMinCountAt(h, "workloads", wl, del, 2)
			expectMinCountAt(h, "podgroups", pg, del, 2)
		})

		// KEP-6276: "creation is fully idempotent so that controllers recover
		// missing objects"; "If only a partial set exists ... the controller
		// completes the missing object on its next sync". The scale is the
		// next sync; the PodGroup must be stamped from the new Workload.
		ginkgo.It("recreates a deleted Workload exactly once and stamps the recreated PodGroup from it before any pod", framework.ID("D-U5", "D-U3", "D-I4"), func(ctx context.Context) {
			d := create(ctx, recreate(f, "missing", 2, "100m").Obj(), gang(nil))
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 2)
			gomega.Expect(scale(ctx, f, d, 0)).To(gomega.Succeed())
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 0)
			waitForGangState(ctx, f, d, 1, false)
			old := theWorkload(ctx, f, d)

			// Recording starts before the delete: an implementation may
			// recreate the Workload at once, or only at the next sync.
			h := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource, framework.PodsResource)
			ginkgo.By("deleting the Workload " + old.Name + " behind the controller's back")
			gomega.Expect(f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).Delete(ctx, old.Name, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &old.UID}})).To(gomega.Succeed())
			h.WaitFirst(ctx, "workloads", "the deletion of Workload "+old.Name, func(c framework.Change) bool {
				return c.UID == string(old.UID) && c.Type == watch.Deleted
			})

			ginkgo.By("scaling to 2: the next sync")
			gomega.Expect(scale(ctx, f, d, 2)).To(gomega.Succeed())
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 2)
			waitForGangState(ctx, f, d, 2, true)
			w := theWorkload(ctx, f, d)
			gomega.Expect(w.UID).NotTo(gomega.Equal(old.UID), "the deleted Workload is back with its old UID?")

			ginkgo.By("no duplicates: one Workload and one PodGroup, each created once")
			gomega.Consistently(ctx, func(ctx context.Context) string {
				return fmt.Sprintf("workloads=%d podgroups=%d", len(workloadsOf(ctx, f, d)), len(podGroups(ctx, f)))
			}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal("workloads=1 podgroups=1"))
			h.Stop()
			wls, pgs, pods := h.Creations("workloads"), h.Creations("podgroups"), h.Creations("pods")
			gomega.Expect(wls).To(gomega.HaveLen(1), "the Workload was created more than once (or not at all):\n%s", h)
			gomega.Expect(wls[0].UID).To(gomega.Equal(string(w.UID)), "writes:\n%s", h)
			gomega.Expect(pgs).To(gomega.HaveLen(1), "the PodGroup was created more than once (or not at all):\n%s", h)
			gomega.Expect(pods).To(gomega.HaveLen(2), "writes:\n%s", h)

			ginkgo.By("the PodGroup comes from the recreated Workload at minCount 2, and precedes the pods")
			pg := podGroups(ctx, f)[0]
			gomega.Expect(pg.Spec.WorkloadRef).NotTo(gomega.BeNil(), "PodGroup %s has no workloadRef", pg.Name)
			gomega.Expect(pg.Spec.WorkloadRef.WorkloadName).To(gomega.Equal(w.Name))
			expectOwner(pg.OwnerReferences, "scheduling.k8s.io/v1beta1", "Workload", w.Name, string(w.UID), false)
			at2, ok := h.First("workloads", func(c framework.Change) bool { return c.UID == string(w.UID) && c.MinCount == 2 })
			gomega.Expect(ok).To(gomega.BeTrue(), "the recreated Workload never showed minCount 2:\n%s", h)
			gomega.Expect(at2.Revision).To(gomega.BeNumerically("<", pgs[0].Revision), "the PodGroup was created before its Workload reached minCount 2:\n%s", h)
			for _, p := range pods {
				gomega.Expect(pgs[0].Revision).To(gomega.BeNumerically("<", p.Revision), "pod %s was created before its PodGroup:\n%s", p.Name, h)
			}
		})
	})

// expectMinCountAt fails unless obj (a Workload or PodGroup write in h) stood
// at minCount want when the pod write happened: the quorum in force for that
// pod, not merely a value the object once had.
func expectMinCountAt(h *framework.WriteHistory, resource string, obj, pod framework.Change, want int32) {
	ginkgo.GinkgoHelper()
	at, ok := h.StateBefore(resource, obj.UID, pod.Revision)
	gomega.Expect(ok).To(gomega.BeTrue(), "no write of %s %s before pod %s (rv %d):\n%s", resource, obj.Name, pod.Name, pod.Revision, h)
	gomega.Expect(at.MinCount).To(gomega.Equal(want), "%s %s stood at minCount %d (rv %d) when pod %s was written (rv %d), not %d:\n%s",
		resource, obj.Name, at.MinCount, at.Revision, pod.Name, pod.Revision, want, h)
}

// newPodCreations returns the pod creations in h of pods not in original.
func newPodCreations(h *framework.WriteHistory, original map[string]bool) []framework.Change {
	var out []framework.Change
	for _, c := range h.Creations("pods") {
		if !original[c.UID] {
			out = append(out, c)
		}
	}
	return out
}

// waitGone waits until get reports NotFound.
func waitGone(ctx context.Context, f *framework.Framework, what string, get func(ctx context.Context) error) {
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) bool {
		return apierrors.IsNotFound(get(ctx))
	}).WithTimeout(f.Timeouts.Cleanup).WithPolling(f.Timeouts.Poll).Should(gomega.BeTrue(), "waiting for %s to be gone", what)
}
