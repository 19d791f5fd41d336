package statefulset

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workload-aware/apps-harness/framework"
)

var _ = ginkgo.Describe("StatefulSet scaling", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("sts-scale")

		ginkgo.It("updates the Workload template and the PodGroup minCount in place, and converges after an interrupted update", framework.ID("S-I5"), func(ctx context.Context) {
			set := create(ctx, parallel(f, "inplace", 3, "100m").Obj(), gang())
			framework.WaitForPodsRunning(ctx, podsOf(f, set), 3)
			before := waitForMinCounts(ctx, f, set, 3)

			ginkgo.By("scaling up to 5")
			scale(ctx, f, set, 5)
			expectSameObjects(waitForMinCounts(ctx, f, set, 5), before)
			framework.WaitForPodsRunning(ctx, podsOf(f, set), 5)

			ginkgo.By("scaling down to 2")
			scale(ctx, f, set, 2)
			expectSameObjects(waitForMinCounts(ctx, f, set, 2), before)
			framework.WaitForPodsRunning(ctx, podsOf(f, set), 2)

			ginkgo.By("scaling to 4 while every PodGroup update is denied: the update is interrupted after the Workload")
			w := theWorkload(ctx, f, set)
			pg := thePodGroup(ctx, f, &w)
			denial := denyPodGroupUpdates(ctx, f, pg.Name)
			scale(ctx, f, set, 4)
			gomega.Eventually(ctx, func(ctx context.Context) gangState {
				return readGangState(ctx, f, set)
			}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.SatisfyAll(
				gomega.HaveField("WorkloadMinCount", int32(4)), gomega.HaveField("PodGroupMinCount", int32(2))),
				"waiting for the Workload template to reach minCount 4 while the PodGroup update is denied")
			gomega.Consistently(ctx, func(ctx context.Context) (string, error) {
				s, err := framework.BindingState(ctx, podsOf(f, set))
				return fmt.Sprintf("pods=%d podgroup minCount=%d", len(s.Pods), readGangState(ctx, f, set).PodGroupMinCount), err
			}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal("pods=2 podgroup minCount=2"),
				"while the PodGroup keeps minCount 2, no pod may be added")
			logf("interrupted: %s", readGangState(ctx, f, set))

			ginkgo.By("lifting the denial: the controller's retry converges")
			denial.lift(ctx)
			expectSameObjects(waitForMinCounts(ctx, f, set, 4), before)
			framework.WaitForPodsRunning(ctx, podsOf(f, set), 4)
			expectPodsInGroup(ctx, f, set, &pg, 4)
		})

		ginkgo.It("scales up in place: minCounts first, new pods join the existing PodGroup, old pods undisturbed", framework.ID("S-E4"), func(ctx context.Context) {
			set := create(ctx, parallel(f, "grow", 3, "200m").Obj(), gang())
			framework.WaitForPodsRunning(ctx, podsOf(f, set), 3)
			before := waitForMinCounts(ctx, f, set, 3)
			original := placements(ctx, f, set)
			w := theWorkload(ctx, f, set)
			pg := thePodGroup(ctx, f, &w)

			h := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource, framework.PodsResource)
			scale(ctx, f, set, 5)
			expectSameObjects(waitForMinCounts(ctx, f, set, 5), before)
			framework.WaitForPodsRunning(ctx, podsOf(f, set), 5)
			expectPodsInGroup(ctx, f, set, &pg, 5)
			expectUndisturbed(ctx, f, set, original)

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
			framework.WaitForPodsRunning(ctx, podsOf(f, set), 5)
			before := waitForMinCounts(ctx, f, set, 5)

			ginkgo.By("scaling down to 3")
			h := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource, framework.PodsResource)
			scale(ctx, f, set, 3)
			expectSameObjects(waitForMinCounts(ctx, f, set, 3), before)
			framework.WaitForPodsRunning(ctx, podsOf(f, set), 3)
			wl := h.WaitFirst(ctx, "workloads", "the Workload at minCount 3", framework.WithMinCount(3))
			g := h.WaitFirst(ctx, "podgroups", "the PodGroup at minCount 3", framework.WithMinCount(3))
			del := h.WaitFirst(ctx, "pods", "the deletion of pod 3 or 4", framework.Terminating(podName(set, 3), podName(set, 4)))
			logf("scale-down 5 -> 3 writes in revision order:\n%s", h)
			gomega.Expect(wl.Revision).To(gomega.BeNumerically("<", g.Revision), "the PodGroup was lowered before the Workload template:\n%s", h)
			gomega.Expect(g.Revision).To(gomega.BeNumerically("<", del.Revision), "pod %s was deleted before both minCounts were lowered:\n%s", del.Name, h)
			h.Stop()

			ginkgo.By("scaling down to 1 while every PodGroup update is denied: no pod may be deleted")
			remaining := placements(ctx, f, set)
			w := theWorkload(ctx, f, set)
			pg := thePodGroup(ctx, f, &w)
			denial := denyPodGroupUpdates(ctx, f, pg.Name)
			scale(ctx, f, set, 1)
			gomega.Eventually(ctx, func(ctx context.Context) gangState {
				return readGangState(ctx, f, set)
			}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.SatisfyAll(
				gomega.HaveField("WorkloadMinCount", int32(1)), gomega.HaveField("PodGroupMinCount", int32(3))),
				"waiting for the Workload template to reach minCount 1 while the PodGroup update is denied")
			logf("denied: %s", readGangState(ctx, f, set))
			gomega.Consistently(ctx, func(ctx context.Context) (string, error) {
				pods, err := framework.ListPods(ctx, podsOf(f, set))
				live := 0
				for _, p := range pods {
					if p.DeletionTimestamp == nil {
						live++
					}
				}
				return fmt.Sprintf("pods=%d live=%d podgroup minCount=%d", len(pods), live, readGangState(ctx, f, set).PodGroupMinCount), err
			}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal("pods=3 live=3 podgroup minCount=3"),
				"while the PodGroup keeps minCount 3, no pod may be deleted")
			expectUndisturbed(ctx, f, set, remaining)
			logf("after %s of denial every pod is still in place: %v", f.Timeouts.StaysUnbound, podNamesOf(ctx, f, set))

			ginkgo.By("lifting the denial: minCount 1, then the deletions")
			denial.lift(ctx)
			expectSameObjects(waitForMinCounts(ctx, f, set, 1), before)
			framework.WaitForPodsRunning(ctx, podsOf(f, set), 1)
			expectUndisturbed(ctx, f, set, map[string]placement{podName(set, 0): remaining[podName(set, 0)]})
			logf("converged: %s", readGangState(ctx, f, set))
		})

		ginkgo.It("scales to zero and back on the same PodGroup, kept at minCount 1 meanwhile", framework.ID("S-E6"), func(ctx context.Context) {
			set := create(ctx, parallel(f, "zero", 3, "200m").Obj(), gang())
			framework.WaitForPodsRunning(ctx, podsOf(f, set), 3)
			before := waitForMinCounts(ctx, f, set, 3)
			w := theWorkload(ctx, f, set)
			pg := thePodGroup(ctx, f, &w)

			ginkgo.By("scaling to zero: pods go, the Workload and the PodGroup stay at minCount 1")
			h := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource, framework.PodsResource)
			scale(ctx, f, set, 0)
			framework.WaitForPodsRunning(ctx, podsOf(f, set), 0)
			expectSameObjects(waitForMinCounts(ctx, f, set, 1), before)
			wl := h.WaitFirst(ctx, "workloads", "the Workload at minCount 1", framework.WithMinCount(1))
			g := h.WaitFirst(ctx, "podgroups", "the PodGroup at minCount 1", framework.WithMinCount(1))
			del := h.WaitFirst(ctx, "pods", "the first pod deletion", framework.Terminating(podName(set, 0), podName(set, 1), podName(set, 2)))
			logf("scale to zero writes in revision order:\n%s", h)
			gomega.Expect(wl.Revision).To(gomega.BeNumerically("<", g.Revision), "the PodGroup was lowered before the Workload template:\n%s", h)
			gomega.Expect(g.Revision).To(gomega.BeNumerically("<", del.Revision), "pod %s was deleted before both minCounts were 1:\n%s", del.Name, h)
			h.Stop()

			ginkgo.By("scaling back to 3: the gang re-forms on the same PodGroup")
			scale(ctx, f, set, 3)
			framework.WaitForPodsRunning(ctx, podsOf(f, set), 3)
			expectSameObjects(waitForMinCounts(ctx, f, set, 3), before)
			expectPodsInGroup(ctx, f, set, &pg, 3)
			got, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).Get(ctx, pg.Name, metav1.GetOptions{})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(got.UID).To(gomega.Equal(pg.UID))
			framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{
				ClientSet: f.ClientSet, Namespace: f.Namespace, Name: pg.Name,
				Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue,
			})
		})
	})

func podNamesOf(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet) []string {
	pods, err := framework.ListPods(ctx, podsOf(f, set))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return podNames(pods)
}
