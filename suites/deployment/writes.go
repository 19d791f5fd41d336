package deployment

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

// KEP-6276, Scalability: "API writes include: Creating one Workload for each
// scheduling-enabled Deployment. Patching the Deployment's Workload when a
// positive replica count changes. Creating one PodGroup for each active
// ReplicaSet revision, or recreating it after scale-up from zero. Patching a
// ReplicaSet-owned PodGroup when its owner or runtime minCount needs
// reconciliation. Deleting the PodGroup when its ReplicaSet reaches zero
// replicas." and "Informer-backed reads limit the steady-state overhead".
//
// The Benchmark spec counts the same calls from the local cluster's audit
// log, by user; this one counts them from watches, so it runs on any
// cluster (framework/writes.go says how a write is attributed without
// managedFields' manager names). The KEP lists writes by their reason, not
// their number: a step's minCount writes may be one or several (the KEP says
// "patching", the reference sends one update), but each must be for a
// listed reason and the last must leave the value the step asks for;
// creations and deletions are counted exactly. What the implementation did
// is in the spec's log and report ("writes by step").

var _ = ginkgo.Describe("Deployment Workload and PodGroup writes", framework.KEP(6276),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment), func() {
		f := framework.New("deploy-writes")

		ginkgo.It("makes only the Workload and PodGroup writes the KEP's Scalability section lists across a lifecycle, and none in a steady state", framework.ID("D-I12"), func(ctx context.Context) {
			h := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource)
			p := framework.NewWritePhases(h, "workloads", "podgroups")
			ginkgo.DeferCleanup(p.Report, "writes by step")
			var d *appsv1.Deployment
			var st apps.State

			s := p.Step(ctx, "create with 3 replicas", func() {
				d = create(ctx, recreate(f, "writes", 3, "100m").Obj(), gang(nil))
				framework.WaitForPodsRunning(ctx, podsOf(f, d), 3)
				st = waitForGangState(ctx, f, d, 3, true)
			})
			workload, first := string(st.Workloads[0].UID), string(st.LivePodGroups()[0].UID)
			expectDeploymentStep(s, "create", 1, 1, 0, false)

			for _, n := range []int32{5, 2} {
				s = p.Step(ctx, fmt.Sprintf("scale to %d", n), func() {
					gomega.Expect(scale(ctx, f, d, n)).To(gomega.Succeed())
					framework.WaitForPodsRunning(ctx, podsOf(f, d), int(n))
					waitForGangState(ctx, f, d, n, true)
				})
				expectDeploymentStep(s, "scale", 0, 0, 0, true)
				framework.ExpectMinCountWritten(s["workloads"], workload, n, "the Workload is patched when a positive replica count changes")
				framework.ExpectMinCountWritten(s["podgroups"], first, n, "the PodGroup's runtime minCount follows its ReplicaSet")
			}

			s = p.Step(ctx, "scale to zero", func() {
				gomega.Expect(scale(ctx, f, d, 0)).To(gomega.Succeed())
				framework.WaitForPodsRunning(ctx, podsOf(f, d), 0)
				waitForGangState(ctx, f, d, 1, false)
			})
			// The Workload keeps a positive minCount (the derived one
			// becomes 1, D-I4): written, but never to 0.
			expectDeploymentStep(s, "scale to zero", 0, 0, 1, true)
			gomega.Expect(s["podgroups"].Deletes[0].UID).To(gomega.Equal(first), "the PodGroup deleted at zero is not the ReplicaSet's")
			framework.ExpectMinCountWritten(s["workloads"], workload, 1, "at zero replicas the Workload keeps the user's minCount, or 1")

			s = p.Step(ctx, "scale back to 3", func() {
				gomega.Expect(scale(ctx, f, d, 3)).To(gomega.Succeed())
				framework.WaitForPodsRunning(ctx, podsOf(f, d), 3)
				waitForGangState(ctx, f, d, 3, true)
			})
			expectDeploymentStep(s, "scale-up from zero", 0, 1, 0, true)
			framework.ExpectMinCountWritten(s["workloads"], workload, 3, "the Workload is patched when a positive replica count changes")
			again := string(s["podgroups"].Creates[0].UID)
			gomega.Expect(again).NotTo(gomega.Equal(first), "the PodGroup recreated after scale-up from zero has the deleted one's UID")

			s = p.Step(ctx, "a Recreate rollout to revision 2", func() {
				_, err := framework.Intent.UpdateDeployment(ctx, f.Namespace, d.Name, func(d *appsv1.Deployment, _ **framework.DeploymentScheduling) {
					builder.SetRevision(&d.Spec.Template, "2")
				})
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "changing the pod template")
				draWaitForRollout(ctx, f, d, 3, nil)
				h.WaitFirst(ctx, "podgroups", "the deletion of the old revision's PodGroup", func(c framework.Change) bool { return c.UID == again && c.Terminating })
				waitForGangState(ctx, f, d, 3, true)
			})
			// The replica count does not change: no Workload write.
			expectDeploymentStep(s, "Recreate rollout", 0, 1, 1, false)
			gomega.Expect(s["podgroups"].Deletes[0].UID).To(gomega.Equal(again), "the PodGroup deleted in the rollout is not the old revision's")

			ginkgo.By("a quiet period: syncs of every controller involved, and no write")
			s = p.Step(ctx, "quiet period (steady state, syncs forced)", func() {
				framework.QuietPeriod(ctx, f.Timeouts.StaysUnbound, f.Timeouts.StaysUnbound/4, func(ctx context.Context, n int) {
					touchDeployment(ctx, f, d, n)
				})
			})
			for _, r := range []string{"workloads", "podgroups"} {
				gomega.Expect(s[r].Implementation()).To(gomega.BeZero(),
					"%s written in a steady state: informer-backed reads mean a sync of an unchanged Deployment writes nothing (%s):\n%s", r, s[r], h)
			}

			ginkgo.By("over the whole lifecycle: one Workload, one PodGroup per active revision or scale-up from zero")
			h.Stop()
			framework.ExpectCounts(p.Total("workloads"), 1, 0, "one Workload for the Deployment, never deleted while it lives")
			framework.ExpectCounts(p.Total("podgroups"), 3, 2, "a PodGroup for revision 1, again after scale-up from zero, one for revision 2; deleted at zero and in the rollout")
			ginkgo.GinkgoWriter.Printf("every write, in revision order:\n%s", h)
		})
	})

// expectDeploymentStep checks one step's writes against the KEP's list:
// exactly podGroupCreates creations and podGroupDeletes deletions of
// PodGroups, workloadCreates of Workloads and no Workload deletion; Workload
// updates only when the replica count changes (replicasChange), each of the
// template's minCount; PodGroup updates only of its minCount or its owners.
func expectDeploymentStep(s map[string]framework.WriteTally, step string, workloadCreates, podGroupCreates, podGroupDeletes int, replicasChange bool) {
	ginkgo.GinkgoHelper()
	why := "KEP-6276 Scalability, " + step
	framework.ExpectCounts(s["workloads"], workloadCreates, 0, why)
	framework.ExpectCounts(s["podgroups"], podGroupCreates, podGroupDeletes, why)
	if !replicasChange {
		gomega.Expect(s["workloads"].Updates).To(gomega.BeEmpty(), "%s: the Workload is patched only when a positive replica count changes", why)
	}
	framework.ExpectUpdatesChange(s["workloads"], why+": the Workload is patched for its template's minCount only", framework.WorkloadMinCountField)
	framework.ExpectUpdatesChange(s["podgroups"], why+": a PodGroup is patched when its owner or runtime minCount needs reconciliation",
		framework.PodGroupMinCountField, framework.OwnerReferencesField)
}

// touchDeployment makes every controller involved sync the Deployment's
// unchanged state: a new annotation value on the Deployment (the Deployment
// side syncs it, and copies the annotation to the new ReplicaSet) and on
// each of its ReplicaSets (the ReplicaSet side syncs each, the one at zero
// replicas included).
//
// Why syncs are forced rather than waited for: an informer's resync
// redelivers every cached object to the same handlers an update does, and a
// resync period may legitimately be hours (kube-controller-manager's
// --min-resync-period is 12 h, each informer picking 12 to 24 h), longer
// than any spec can wait. An implementation that writes whenever it syncs
// an unchanged state writes on these syncs too. The quiet period still lasts
// the suite's "nothing happens" window (at least --retry-window, the longest
// interval between retries the suite permits), so a write that comes back on
// a requeue or a periodic timer of that length is seen as well.
func touchDeployment(ctx context.Context, f *framework.Framework, d *appsv1.Deployment, n int) {
	ginkgo.GinkgoHelper()
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"was-harness.io/sync":"%d-%d"}}}`, n, time.Now().UnixNano()))
	_, err := f.ClientSet.AppsV1().Deployments(f.Namespace).Patch(ctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "annotating Deployment %s", d.Name)
	for _, rs := range apps.ReplicaSets(ctx, f, apps.Deployment(d)) {
		_, err := f.ClientSet.AppsV1().ReplicaSets(f.Namespace).Patch(ctx, rs.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "annotating ReplicaSet %s", rs.Name)
	}
}
