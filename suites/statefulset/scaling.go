package statefulset

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
)

var _ = ginkgo.Describe("StatefulSet scaling", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("sts-scale")

		ginkgo.It("updates the Workload template and the PodGroup minCount in place, and converges after an interrupted update", framework.ID("S-I5"), func(ctx context.Context) {
			set := create(ctx, parallel(f, "inplace", 3, "100m").Obj(), gang())
			a := apps.StatefulSet(set)
			apps.WaitForRunning(ctx, f, a, 3)
			before := apps.WaitForMinCounts(ctx, f, a, 3)

			ginkgo.By("scaling up to 5")
			apps.Scale(ctx, f, a, 5)
			apps.ExpectSameObjects(apps.WaitForMinCounts(ctx, f, a, 5), before)
			apps.WaitForRunning(ctx, f, a, 5)

			ginkgo.By("scaling down to 2")
			apps.Scale(ctx, f, a, 2)
			apps.ExpectSameObjects(apps.WaitForMinCounts(ctx, f, a, 2), before)
			apps.WaitForRunning(ctx, f, a, 2)

			ginkgo.By("scaling to 4 while every PodGroup update is denied: the update is interrupted after the Workload")
			w := apps.TheWorkload(ctx, f, a)
			pg := apps.ThePodGroup(ctx, f, &w)
			denial := denyPodGroupUpdates(ctx, f, pg.Name)
			apps.Scale(ctx, f, a, 4)
			apps.WaitForState(ctx, f, a, "the Workload template at minCount 4 while the PodGroup update is denied", apps.MinCounts(4, 2))
			apps.KeepsState(ctx, f, a, "2 pods and the PodGroup at minCount 2: no pod may be added while the PodGroup keeps minCount 2",
				gomega.SatisfyAll(apps.MinCounts(4, 2), gomega.HaveField("Pods", gomega.HaveLen(2)), gomega.HaveField("Terminating", gomega.BeEmpty())))
			logf("interrupted: %s", apps.Read(ctx, f, a))

			ginkgo.By("lifting the denial: the controller's retry converges")
			denial.lift(ctx)
			apps.ExpectSameObjects(apps.WaitForMinCounts(ctx, f, a, 4), before)
			apps.WaitForRunning(ctx, f, a, 4)
			apps.ExpectPodsInGroup(ctx, f, a, apps.OwnerStatefulSet(set), &pg, 4)
		})

		ginkgo.It("scales up in place: minCounts first, new pods join the existing PodGroup, old pods undisturbed", framework.ID("S-E4"), func(ctx context.Context) {
			set := create(ctx, parallel(f, "grow", 3, "200m").Obj(), gang())
			a := apps.StatefulSet(set)
			apps.WaitForRunning(ctx, f, a, 3)
			before := apps.WaitForMinCounts(ctx, f, a, 3)
			w := apps.TheWorkload(ctx, f, a)
			pg := apps.ThePodGroup(ctx, f, &w)

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

		ginkgo.It("scales down: both minCounts are lowered before any pod is deleted, and deletion waits for a denied update to succeed", framework.ID("S-E5"), func(ctx context.Context) {
			set := create(ctx, parallel(f, "shrink", 5, "100m").Obj(), gang())
			a := apps.StatefulSet(set)
			apps.WaitForRunning(ctx, f, a, 5)
			before := apps.WaitForMinCounts(ctx, f, a, 5)

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

			ginkgo.By("scaling down to 1 while every PodGroup update is denied: no pod may be deleted")
			remaining := apps.Read(ctx, f, a)
			w := apps.TheWorkload(ctx, f, a)
			pg := apps.ThePodGroup(ctx, f, &w)
			denial := denyPodGroupUpdates(ctx, f, pg.Name)
			apps.Scale(ctx, f, a, 1)
			logf("denied: %s", apps.WaitForState(ctx, f, a, "the Workload template at minCount 1 while the PodGroup update is denied", apps.MinCounts(1, 3)))
			apps.KeepsState(ctx, f, a, "3 live pods and the PodGroup at minCount 3: no pod may be deleted while the PodGroup keeps minCount 3",
				gomega.SatisfyAll(apps.MinCounts(1, 3), gomega.HaveField("Pods", gomega.HaveLen(3)), gomega.HaveField("Terminating", gomega.BeEmpty())))
			apps.ExpectPodsUndisturbed(apps.Read(ctx, f, a), remaining)
			logf("after %s of denial every pod is still in place: %s", f.Timeouts.StaysUnbound, apps.Read(ctx, f, a))

			ginkgo.By("lifting the denial: minCount 1, then the deletions")
			denial.lift(ctx)
			apps.ExpectSameObjects(apps.WaitForMinCounts(ctx, f, a, 1), before)
			apps.WaitForRunning(ctx, f, a, 1)
			apps.ExpectPodsUndisturbed(apps.Read(ctx, f, a), remaining.WithPods(podName(set, 0)))
			logf("converged: %s", apps.Read(ctx, f, a))
		})

		ginkgo.It("scales to zero and back on the same PodGroup, kept at minCount 1 meanwhile", framework.ID("S-E6"), func(ctx context.Context) {
			set := create(ctx, parallel(f, "zero", 3, "200m").Obj(), gang())
			a := apps.StatefulSet(set)
			apps.WaitForRunning(ctx, f, a, 3)
			before := apps.WaitForMinCounts(ctx, f, a, 3)
			w := apps.TheWorkload(ctx, f, a)
			pg := apps.ThePodGroup(ctx, f, &w)

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

			ginkgo.By("scaling back to 3: the gang re-forms on the same PodGroup")
			apps.Scale(ctx, f, a, 3)
			apps.WaitForRunning(ctx, f, a, 3)
			apps.ExpectSameObjects(apps.WaitForMinCounts(ctx, f, a, 3), before)
			apps.ExpectPodsInGroup(ctx, f, a, apps.OwnerStatefulSet(set), &pg, 3)
			got, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).Get(ctx, pg.Name, metav1.GetOptions{})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(got.UID).To(gomega.Equal(pg.UID))
			framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{
				ClientSet: f.ClientSet, Namespace: f.Namespace, Name: pg.Name,
				Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue,
			})
		})
	})
