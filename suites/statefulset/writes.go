package statefulset

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// KEP-6277, Scalability: "For each StatefulSet with spec.scheduling set, the
// controller uses informers for Workload and PodGroup objects and makes the
// following API calls: CREATE Workload — 1 per StatefulSet creation; CREATE
// PodGroup — 1 per StatefulSet creation; PATCH Workload — on scale
// (controller-owned template minCount update); PATCH PodGroup — on scale
// (minCount update). There is no PodGroup recreation path: the PodGroup is
// created once and mutated in place for the lifetime of the StatefulSet."
//
// Counted from watches (framework/writes.go says how a write is attributed
// without managedFields' manager names). The list is exhaustive ("the
// following API calls"), so outside a scale there is no Workload or PodGroup
// write at all, and no delete ever. The number of minCount writes per scale
// is not fixed by the text ("PATCH ... on scale"): one or several, each a
// minCount update, the last at the new value. What the implementation did is
// in the spec's log and report ("writes by step").

var _ = ginkgo.Describe("StatefulSet Workload and PodGroup writes", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("sts-writes")

		ginkgo.It("makes only the Workload and PodGroup writes the KEP's Scalability section lists across a lifecycle, never recreates the PodGroup, and writes nothing in a steady state", framework.ID("S-I20"), func(ctx context.Context) {
			h := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource)
			p := framework.NewWritePhases(h, "workloads", "podgroups")
			ginkgo.DeferCleanup(p.Report, "writes by step")
			var set *appsv1.StatefulSet
			var a apps.App
			var st apps.State

			s := p.Step(ctx, "create with 3 replicas", func() {
				set = create(ctx, parallel(f, "writes", 3, "100m").Obj(), gang())
				a = apps.StatefulSet(set)
				apps.WaitForRunning(ctx, f, a, 3)
				st = apps.WaitForMinCounts(ctx, f, a, 3)
			})
			workload, group := string(st.Workloads[0].UID), string(st.LivePodGroups()[0].UID)
			expectStatefulSetStep(s, "create", 1, false)

			// Down to zero and back: the step where a Deployment deletes and
			// recreates its PodGroup; a StatefulSet keeps it at minCount 1.
			for _, step := range []struct{ replicas, minCount int32 }{{5, 5}, {2, 2}, {0, 1}, {3, 3}} {
				s = p.Step(ctx, fmt.Sprintf("scale to %d", step.replicas), func() {
					apps.Scale(ctx, f, a, step.replicas)
					apps.WaitForRunning(ctx, f, a, int(step.replicas))
					apps.WaitForMinCounts(ctx, f, a, step.minCount)
				})
				expectStatefulSetStep(s, fmt.Sprintf("scale to %d", step.replicas), 0, true)
				framework.ExpectMinCountWritten(s["workloads"], workload, step.minCount, "PATCH Workload on scale (controller-owned template minCount update)")
				framework.ExpectMinCountWritten(s["podgroups"], group, step.minCount, "PATCH PodGroup on scale (minCount update)")
			}

			s = p.Step(ctx, "a rolling update to revision 2", func() {
				_, err := framework.Intent.UpdateStatefulSet(ctx, f.Namespace, set.Name, func(s *appsv1.StatefulSet, _ **framework.StatefulSetScheduling) {
					builder.SetRevision(&s.Spec.Template, "2")
				})
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "changing the pod template")
				waitForRollout(ctx, f, set, 3)
			})
			expectStatefulSetStep(s, "rolling update", 0, false)

			s = p.Step(ctx, "quiet period (steady state, syncs forced)", func() {
				framework.QuietPeriod(ctx, f.Timeouts.StaysUnbound, f.Timeouts.StaysUnbound/4, func(ctx context.Context, n int) {
					touchStatefulSet(ctx, f, set, n)
				})
			})
			for _, r := range []string{"workloads", "podgroups"} {
				gomega.Expect(s[r].Implementation()).To(gomega.BeZero(),
					"%s written in a steady state: the controller reads from informers, so a sync of an unchanged StatefulSet writes nothing (%s):\n%s", r, s[r], h)
			}

			ginkgo.By("over the whole lifecycle: one Workload, one PodGroup, created once and mutated in place")
			h.Stop()
			framework.ExpectCounts(p.Total("workloads"), 1, 0, "CREATE Workload — 1 per StatefulSet creation")
			framework.ExpectCounts(p.Total("podgroups"), 1, 0, "CREATE PodGroup — 1 per StatefulSet creation; there is no PodGroup recreation path")
			for _, c := range h.Sorted() {
				if c.Resource == "podgroups" {
					gomega.Expect(c.UID).To(gomega.Equal(group), "a second PodGroup was written (%s): there is no PodGroup recreation path:\n%s", c, h)
				}
			}
			logf("every write, in revision order:\n%s", h)
		})
	})

// expectStatefulSetStep checks one step's writes against the KEP's list:
// workloadCreates Workloads and as many PodGroups created, nothing deleted;
// updates only on a scale, each a minCount update.
func expectStatefulSetStep(s map[string]framework.WriteTally, step string, creates int, scale bool) {
	ginkgo.GinkgoHelper()
	why := "KEP-6277 Scalability, " + step
	framework.ExpectCounts(s["workloads"], creates, 0, why)
	framework.ExpectCounts(s["podgroups"], creates, 0, why+"; there is no PodGroup recreation path")
	if !scale {
		for _, r := range []string{"workloads", "podgroups"} {
			gomega.Expect(s[r].Updates).To(gomega.BeEmpty(), "%s: %s are patched only on scale", why, r)
		}
	}
	framework.ExpectUpdatesChange(s["workloads"], why+": PATCH Workload is the template minCount update", framework.WorkloadMinCountField)
	framework.ExpectUpdatesChange(s["podgroups"], why+": PATCH PodGroup is the minCount update", framework.PodGroupMinCountField)
}

// touchStatefulSet makes the StatefulSet controller sync the unchanged
// StatefulSet: a new annotation value on it. Syncs are forced rather than
// waited for, because an informer's resync may legitimately be hours
// (kube-controller-manager's --min-resync-period is 12 h, each informer
// picking 12 to 24 h), longer than a spec can wait, and it runs the same
// sync as this update; the quiet period still lasts the suite's "nothing
// happens" window (at least --retry-window), so a write that returns on a
// requeue or timer of that length is seen as well.
func touchStatefulSet(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet, n int) {
	ginkgo.GinkgoHelper()
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"was-harness.io/sync":"%d-%d"}}}`, n, time.Now().UnixNano()))
	_, err := f.ClientSet.AppsV1().StatefulSets(f.Namespace).Patch(ctx, set.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "annotating StatefulSet %s", set.Name)
}
