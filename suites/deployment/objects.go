package deployment

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
)

var _ = ginkgo.Describe("Deployment Workload and PodGroups", framework.KEP(6276),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment), func() {
		f := framework.New("deploy-objects")

		ginkgo.It("compiles one Deployment-owned Workload and one ReplicaSet-owned PodGroup, and wires every pod to it", framework.ID("D-I1", "D-I7"), func(ctx context.Context) {
			d := create(ctx, recreate(f, "gang", 3, "200m").Obj(), gang(nil))
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 3)

			w := theWorkload(ctx, f, d)
			gomega.Expect(w.Spec.PodGroupTemplates).To(gomega.HaveLen(1))
			gomega.Expect(framework.WorkloadMinCount(&w)).To(gomega.Equal(int32(3)), "minCount derived from replicas")
			gomega.Expect(w.Spec.ControllerRef).To(gomega.HaveValue(gomega.And(
				gomega.HaveField("APIGroup", "apps"), gomega.HaveField("Kind", "Deployment"), gomega.HaveField("Name", d.Name))))
			expectOwner(w.OwnerReferences, "apps/v1", "Deployment", d.Name, string(d.UID), true)

			rss := replicaSets(ctx, f, d)
			gomega.Expect(rss).To(gomega.HaveLen(1))
			rs := rss[0]
			gomega.Expect(rs.Spec.Template.Spec.SchedulingGroup).To(gomega.BeNil(), "the ReplicaSet's stored template must not change")
			pgs := podGroups(ctx, f)
			gomega.Expect(pgs).To(gomega.HaveLen(1), "exactly one PodGroup")
			pg := pgs[0]
			gomega.Expect(pg.Name).To(gomega.Equal(d.Name+"-"+rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]), "PodGroup named <deployment>-<pod-template-hash>")
			gomega.Expect(framework.PodGroupMinCount(&pg)).To(gomega.Equal(int32(3)))
			gomega.Expect(pg.Spec.WorkloadRef).To(gomega.HaveValue(gomega.Equal(schedulingv1beta1.WorkloadReference{
				WorkloadName: w.Name, TemplateName: w.Spec.PodGroupTemplates[0].Name})))
			expectOwner(pg.OwnerReferences, "apps/v1", "ReplicaSet", rs.Name, string(rs.UID), true)
			expectOwner(pg.OwnerReferences, "scheduling.k8s.io/v1beta1", "Workload", w.Name, string(w.UID), false)
			expectOwner(rs.OwnerReferences, "apps/v1", "Deployment", d.Name, string(d.UID), true)

			pods, err := framework.ListPods(ctx, podsOf(f, d))
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(pods).To(gomega.HaveLen(3))
			for _, p := range pods {
				gomega.Expect(p.Spec.SchedulingGroup).NotTo(gomega.BeNil(), "pod %s has no schedulingGroup", p.Name)
				gomega.Expect(p.Spec.SchedulingGroup.PodGroupName).To(gomega.HaveValue(gomega.Equal(pg.Name)), "pod %s", p.Name)
				expectOwner(p.OwnerReferences, "apps/v1", "ReplicaSet", rs.Name, string(rs.UID), true)
				expectOwner(p.OwnerReferences, "scheduling.k8s.io/v1beta1", "PodGroup", pg.Name, string(pg.UID), false)
			}
		})

		ginkgo.It("creates the Workload before the ReplicaSet and the PodGroup before any pod", framework.ID("D-I2"), func(ctx context.Context) {
			rec := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.ReplicaSetsResource, framework.PodGroupsResource, framework.PodsResource)
			d := create(ctx, recreate(f, "ordered", 3, "100m").Obj(), gang(nil))
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 3)
			gomega.Eventually(func() int { return len(rec.Creations("pods")) }).WithTimeout(f.Timeouts.PodsBound).Should(gomega.Equal(3))
			rec.Stop()

			workloads, rss, pgs, pods := rec.Creations("workloads"), rec.Creations("replicasets"), rec.Creations("podgroups"), rec.Creations("pods")
			gomega.Expect(workloads).To(gomega.HaveLen(1), "creations:\n%s", rec)
			gomega.Expect(rss).To(gomega.HaveLen(1), "creations:\n%s", rec)
			gomega.Expect(pgs).To(gomega.HaveLen(1), "creations:\n%s", rec)
			gomega.Expect(workloads[0].Revision).To(gomega.BeNumerically("<", rss[0].Revision), "Workload created after the ReplicaSet:\n%s", rec)
			gomega.Expect(pgs[0].Revision).To(gomega.BeNumerically("<", pods[0].Revision), "a pod was created before its PodGroup:\n%s", rec)
		})

		ginkgo.It("keeps the Workload template and the active PodGroup at the resolved minCount while scaling", framework.ID("D-I3"), func(ctx context.Context) {
			d := create(ctx, recreate(f, "derived", 3, "100m").Obj(), gang(nil))
			waitForGangState(ctx, f, d, 3, true)
			ginkgo.By("scaling up to 5: minCount follows replicas")
			gomega.Expect(scale(ctx, f, d, 5)).To(gomega.Succeed())
			waitForGangState(ctx, f, d, 5, true)
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 5)
			ginkgo.By("scaling down to 2")
			gomega.Expect(scale(ctx, f, d, 2)).To(gomega.Succeed())
			waitForGangState(ctx, f, d, 2, true)

			ginkgo.By("an explicit minCount stays as the user set it")
			e := create(ctx, recreate(f, "explicit", 2, "100m").Obj(), gang(ptr.To[int32](2)))
			gomega.Expect(scale(ctx, f, e, 4)).To(gomega.Succeed())
			framework.WaitForPodsRunning(ctx, podsOf(f, e), 4)
			w := theWorkload(ctx, f, e)
			gomega.Expect(framework.WorkloadMinCount(&w)).To(gomega.Equal(int32(2)))
			// KEP-6276: "1 PodGroup per ReplicaSet"; "For a positive ReplicaSet
			// size, it creates or updates the PodGroup and inherits its runtime
			// gang minCount from the Workload's PodGroupTemplate." The
			// PodGroup is found by its controller ownerReference (any name),
			// and must exist: a ReplicaSet without one proves nothing here.
			rs := replicaSets(ctx, f, e)[0]
			var controlled []string
			for _, pg := range podGroups(ctx, f) {
				if metav1.IsControlledBy(&pg, &rs) && pg.DeletionTimestamp == nil {
					controlled = append(controlled, pg.Name)
					gomega.Expect(framework.PodGroupMinCount(&pg)).To(gomega.Equal(int32(2)), "PodGroup %s", pg.Name)
				}
			}
			gomega.Expect(controlled).To(gomega.HaveLen(1), "ReplicaSet %s at 4 replicas must control exactly one live PodGroup", rs.Name)
		})

		ginkgo.It("deletes the PodGroup at zero replicas, keeps the Workload at minCount 1, and recreates the PodGroup before pods", framework.ID("D-I4", "D-U3"), func(ctx context.Context) {
			d := create(ctx, recreate(f, "zero", 3, "100m").Obj(), gang(nil))
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 3)
			before := theWorkload(ctx, f, d)

			gomega.Expect(scale(ctx, f, d, 0)).To(gomega.Succeed())
			waitForGangState(ctx, f, d, 1, false)
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 0)
			gomega.Expect(theWorkload(ctx, f, d).UID).To(gomega.Equal(before.UID), "the Workload must be kept, not recreated")

			rec := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource, framework.PodsResource)
			gomega.Expect(scale(ctx, f, d, 2)).To(gomega.Succeed())
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 2)
			waitForGangState(ctx, f, d, 2, true)
			gomega.Eventually(func() int { return len(rec.Creations("pods")) }).WithTimeout(f.Timeouts.PodsBound).Should(gomega.Equal(2))
			rec.Stop()
			gomega.Expect(rec.Creations("workloads")).To(gomega.BeEmpty(), "the Workload was recreated:\n%s", rec)
			pgs, pods := rec.Creations("podgroups"), rec.Creations("pods")
			gomega.Expect(pgs).To(gomega.HaveLen(1), "events:\n%s", rec)
			gomega.Expect(pgs[0].Revision).To(gomega.BeNumerically("<", pods[0].Revision), "a pod was created before the PodGroup:\n%s", rec)
		})

		ginkgo.DescribeTable("garbage-collects the Workload, the PodGroups and the pods with the Deployment", framework.ID("D-I5"),
			func(ctx context.Context, propagation metav1.DeletionPropagation) {
				d := create(ctx, recreate(f, "gc", 2, "100m").Obj(), gang(nil))
				framework.WaitForPodsRunning(ctx, podsOf(f, d), 2)
				w := theWorkload(ctx, f, d)
				gomega.Expect(podGroups(ctx, f)).To(gomega.HaveLen(1))

				gomega.Expect(f.ClientSet.AppsV1().Deployments(f.Namespace).Delete(ctx, d.Name, metav1.DeleteOptions{
					PropagationPolicy: ptr.To(propagation)})).To(gomega.Succeed())
				gomega.Eventually(ctx, func(ctx context.Context) []string {
					var left []string
					if _, err := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).Get(ctx, w.Name, metav1.GetOptions{}); err == nil {
						left = append(left, "workload/"+w.Name)
					}
					for _, pg := range podGroups(ctx, f) {
						left = append(left, "podgroup/"+pg.Name)
					}
					pods, _ := framework.ListPods(ctx, podsOf(f, d))
					for _, p := range pods {
						left = append(left, "pod/"+p.Name)
					}
					return left
				}).WithTimeout(f.Timeouts.Cleanup).WithPolling(f.Timeouts.Poll).Should(gomega.BeEmpty(),
					"waiting for garbage collection (%s) of the Deployment's Workload, PodGroups and pods", propagation)
			},
			// Background is what kubectl and most clients use. It is the case
			// where a pod's ownerReference to a terminating PodGroup would hold
			// the pod forever (see controllers/deployment syncCascade).
			ginkgo.Entry("in the background", metav1.DeletePropagationBackground),
			ginkgo.Entry("in the foreground", metav1.DeletePropagationForeground),
		)

		ginkgo.It("gives a Deployment without spec.scheduling no Workload or PodGroup", framework.ID("D-I8"), func(ctx context.Context) {
			d := create(ctx, recreate(f, "plain", 3, "100m").Obj(), nil)
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 3)
			gomega.Expect(scale(ctx, f, d, 4)).To(gomega.Succeed())
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 4)
			gomega.Consistently(ctx, func(ctx context.Context) string {
				return fmt.Sprintf("workloads=%d podgroups=%d", len(workloadsOf(ctx, f, d)), len(podGroups(ctx, f)))
			}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal("workloads=0 podgroups=0"))
			pods, err := framework.ListPods(ctx, podsOf(f, d))
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			for _, p := range pods {
				gomega.Expect(p.Spec.SchedulingGroup).To(gomega.BeNil(), "pod %s", p.Name)
				gomega.Expect(p.OwnerReferences).To(gomega.HaveLen(1), "pod %s has owners beyond its ReplicaSet", p.Name)
			}
		})
	})
