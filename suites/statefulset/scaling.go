package statefulset

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
)

var _ = ginkgo.Describe("StatefulSet scaling", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("sts-scale")

		ginkgo.It("updates the Workload template and the PodGroup minCount in place, and converges after an interrupted update", framework.ID("S-I5", "S-U5"), func(ctx context.Context) {
			set, a, before := runningGang(ctx, f, "inplace", 3, "100m")

			ginkgo.By("scaling up to 5")
			apps.Scale(ctx, f, a, 5)
			apps.ExpectSameObjects(apps.WaitForMinCounts(ctx, f, a, 5), before)
			apps.WaitForRunning(ctx, f, a, 5)

			ginkgo.By("scaling down to 2")
			apps.Scale(ctx, f, a, 2)
			apps.ExpectSameObjects(apps.WaitForMinCounts(ctx, f, a, 2), before)
			apps.WaitForRunning(ctx, f, a, 2)

			ginkgo.By("scaling to 4 while every PodGroup update is denied: the update is interrupted after the Workload")
			_, pg := objectsOf(ctx, f, a)
			denial := denyPodGroupUpdates(ctx, f, pg.Name)
			apps.Scale(ctx, f, a, 4)
			apps.WaitForState(ctx, f, a, "the Workload template at minCount 4 while the PodGroup update is denied", apps.MinCounts(4, 2))
			apps.KeepsState(ctx, f, a, "2 pods and the PodGroup at minCount 2: no pod may be added while the PodGroup keeps minCount 2",
				gomega.SatisfyAll(apps.MinCounts(4, 2), gomega.HaveField("Pods", gomega.HaveLen(2)), gomega.HaveField("Terminating", gomega.BeEmpty())))
			logf("interrupted: %s", apps.Read(ctx, f, a))

			ginkgo.By("lifting the denial: the controller's retry converges")
			denial.Lift(ctx)
			apps.ExpectSameObjects(apps.WaitForMinCounts(ctx, f, a, 4), before)
			apps.WaitForRunning(ctx, f, a, 4)
			apps.ExpectPodsInGroup(ctx, f, a, apps.OwnerStatefulSet(set), &pg, 4)
		})

		ginkgo.It("scales up in place: minCounts first, new pods join the existing PodGroup, old pods undisturbed", framework.ID("S-E4"), func(ctx context.Context) {
			set, a, before := runningGang(ctx, f, "grow", 3, "200m")
			_, pg := objectsOf(ctx, f, a)

			h := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource, framework.PodsResource)
			apps.Scale(ctx, f, a, 5)
			apps.ExpectSameObjects(apps.WaitForMinCounts(ctx, f, a, 5), before)
			apps.WaitForRunning(ctx, f, a, 5)
			apps.ExpectPodsInGroup(ctx, f, a, apps.OwnerStatefulSet(set), &pg, 5)
			apps.ExpectPodsUndisturbed(apps.Read(ctx, f, a), before)

			ginkgo.By("the Workload template, then the PodGroup, carried minCount 5 before the new pods were created")
			wl := h.WaitFirst(ctx, "workloads", "the Workload at minCount 5", framework.WithMinCount(5))
			g := h.WaitFirst(ctx, "podgroups", "the PodGroup at minCount 5", framework.WithMinCount(5))
			gomega.Expect(wl.Revision).To(gomega.BeNumerically("<", g.Revision), "the PodGroup was updated before the Workload template:\n%s", h)
			for _, i := range []int{3, 4} {
				c := h.WaitFirst(ctx, "pods", podName(set, i)+" created", framework.Created(podName(set, i)))
				gomega.Expect(g.Revision).To(gomega.BeNumerically("<", c.Revision), "pod %s was created before the PodGroup reached minCount 5:\n%s", c.Name, h)
			}
			logf("scale-up writes in revision order:\n%s", h)
		})

		ginkgo.It("scales down: both minCounts are lowered before any pod is deleted, and deletion waits while either update is denied", framework.ID("S-E5", "S-U6"), func(ctx context.Context) {
			set, a, before := runningGang(ctx, f, "shrink", 5, "100m")

			ginkgo.By("scaling down to 3")
			h := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource, framework.PodsResource)
			apps.Scale(ctx, f, a, 3)
			apps.ExpectSameObjects(apps.WaitForMinCounts(ctx, f, a, 3), before)
			apps.WaitForRunning(ctx, f, a, 3)
			wl := h.WaitFirst(ctx, "workloads", "the Workload at minCount 3", framework.WithMinCount(3))
			g := h.WaitFirst(ctx, "podgroups", "the PodGroup at minCount 3", framework.WithMinCount(3))
			del := h.WaitFirst(ctx, "pods", "the deletion of pod 3 or 4", framework.Terminating(podName(set, 3), podName(set, 4)))
			logf("scale-down 5 -> 3 writes in revision order:\n%s", h)
			gomega.Expect(wl.Revision).To(gomega.BeNumerically("<", g.Revision), "the PodGroup was lowered before the Workload template:\n%s", h)
			gomega.Expect(g.Revision).To(gomega.BeNumerically("<", del.Revision), "pod %s was deleted before both minCounts were lowered:\n%s", del.Name, h)
			h.Stop()
			w, pg := objectsOf(ctx, f, a)

			ginkgo.By("scaling down to 2 while every Workload update is denied: neither minCount moves and no pod is deleted")
			remaining := apps.Read(ctx, f, a)
			denial := denyWorkloadUpdates(ctx, f, w.Name)
			apps.Scale(ctx, f, a, 2)
			apps.WaitForObserved(ctx, f, a)
			apps.KeepsState(ctx, f, a, "3 live pods and both minCounts at 3: the Workload template is lowered first, and deletion waits for both",
				gomega.SatisfyAll(apps.MinCounts(3, 3), gomega.HaveField("Pods", gomega.HaveLen(3)), gomega.HaveField("Terminating", gomega.BeEmpty())))
			apps.ExpectPodsUndisturbed(apps.Read(ctx, f, a), remaining)
			ginkgo.By("lifting the denial: minCount 2, then the deletion")
			denial.Lift(ctx)
			apps.ExpectSameObjects(apps.WaitForMinCounts(ctx, f, a, 2), before)
			apps.WaitForRunning(ctx, f, a, 2)
			apps.ExpectPodsUndisturbed(apps.Read(ctx, f, a), remaining.WithPods(podName(set, 0), podName(set, 1)))

			ginkgo.By("scaling down to 1 while every PodGroup update is denied: the Workload template moves, no pod is deleted")
			remaining = apps.Read(ctx, f, a)
			denial = denyPodGroupUpdates(ctx, f, pg.Name)
			apps.Scale(ctx, f, a, 1)
			logf("denied: %s", apps.WaitForState(ctx, f, a, "the Workload template at minCount 1 while the PodGroup update is denied", apps.MinCounts(1, 2)))
			apps.KeepsState(ctx, f, a, "2 live pods and the PodGroup at minCount 2: no pod may be deleted while the PodGroup keeps minCount 2",
				gomega.SatisfyAll(apps.MinCounts(1, 2), gomega.HaveField("Pods", gomega.HaveLen(2)), gomega.HaveField("Terminating", gomega.BeEmpty())))
			apps.ExpectPodsUndisturbed(apps.Read(ctx, f, a), remaining)

			ginkgo.By("lifting the denial: minCount 1, then the deletion")
			denial.Lift(ctx)
			apps.ExpectSameObjects(apps.WaitForMinCounts(ctx, f, a, 1), before)
			apps.WaitForRunning(ctx, f, a, 1)
			apps.ExpectPodsUndisturbed(apps.Read(ctx, f, a), remaining.WithPods(podName(set, 0)))
			logf("converged: %s", apps.Read(ctx, f, a))
		})

		ginkgo.It("scales to zero and back on the same PodGroup, kept at minCount 1 meanwhile and never written back to spec.scheduling", framework.ID("S-E6", "S-U7", "S-U8"), func(ctx context.Context) {
			set, a, before := runningGang(ctx, f, "zero", 3, "200m")
			_, pg := objectsOf(ctx, f, a)

			ginkgo.By("scaling to zero: pods go, the Workload and the PodGroup stay at minCount 1")
			h := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource, framework.PodsResource)
			apps.Scale(ctx, f, a, 0)
			apps.WaitForRunning(ctx, f, a, 0)
			apps.ExpectSameObjects(apps.WaitForMinCounts(ctx, f, a, 1), before)
			wl := h.WaitFirst(ctx, "workloads", "the Workload at minCount 1", framework.WithMinCount(1))
			g := h.WaitFirst(ctx, "podgroups", "the PodGroup at minCount 1", framework.WithMinCount(1))
			del := h.WaitFirst(ctx, "pods", "the first pod deletion", framework.Terminating(podName(set, 0), podName(set, 1), podName(set, 2)))
			logf("scale to zero writes in revision order:\n%s", h)
			gomega.Expect(wl.Revision).To(gomega.BeNumerically("<", g.Revision), "the PodGroup was lowered before the Workload template:\n%s", h)
			gomega.Expect(g.Revision).To(gomega.BeNumerically("<", del.Revision), "pod %s was deleted before both minCounts were 1:\n%s", del.Name, h)
			h.Stop()
			for _, c := range h.Sorted() {
				if c.Resource == "workloads" || c.Resource == "podgroups" {
					gomega.Expect(c.MinCount).NotTo(gomega.BeZero(), "S-U7: minCount 0 was written:\n%s", h)
					gomega.Expect(c.Terminating).To(gomega.BeFalse(), "S-U7: the Workload or the PodGroup was deleted at zero replicas:\n%s", h)
				}
			}

			ginkgo.By("S-U8: the derived minCount is never written back to spec.scheduling")
			stored := storedIntent(ctx, f, set)
			gomega.Expect(stored).NotTo(gomega.BeNil())
			gomega.Expect(stored.SchedulingPolicy).NotTo(gomega.BeNil())
			gomega.Expect(stored.SchedulingPolicy.Gang).NotTo(gomega.BeNil())
			gomega.Expect(stored.SchedulingPolicy.Gang.MinCount).To(gomega.BeNil(), "spec.scheduling.schedulingPolicy.gang.minCount was written")

			ginkgo.By("scaling back to 3: the gang re-forms, with new pods, on the same PodGroup")
			apps.Scale(ctx, f, a, 3)
			after := apps.WaitForGang(ctx, f, a, 3, 3)
			apps.ExpectSameObjects(after, before)
			for name, uid := range after.PodUIDs() {
				gomega.Expect(before.PodUIDs()).NotTo(gomega.ContainElement(uid), "pod %s survived the scale to zero", name)
			}
			apps.ExpectPodsInGroup(ctx, f, a, apps.OwnerStatefulSet(set), &pg, 3)
		})
	})
