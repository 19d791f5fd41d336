package deployment

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
)

var _ = ginkgo.Describe("Deployment gangs on the scheduler", framework.KEP(6276),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment), func() {
		f := framework.New("deploy-gang")

		ginkgo.It("binds all replicas of a Recreate gang at once, or none", framework.ID("D-E1"), framework.Serial, func(ctx context.Context) {
			fit := framework.MeasureCapacity(ctx, f)
			// One pod per node at most: up to 3 of them fit (a kind cluster may have only 2 or 3 nodes).
			fits := min(3, fit.Nodes)
			ginkgo.By(fmt.Sprintf("a gang of %d pods of %s, one per node, fits and binds completely", fits, fit.OnePerNode.String()))
			small := create(ctx, recreate(f, "fits", int32(fits), fit.OnePerNode.String()).Obj(), gang(nil))
			framework.WaitForPodsRunning(ctx, podsOf(f, small), fits)
			gomega.Expect(scale(ctx, f, small, 0)).To(gomega.Succeed())
			framework.WaitForPodsRunning(ctx, podsOf(f, small), 0)

			ginkgo.By(fmt.Sprintf("a gang of %d pods of %s on %d nodes binds nothing", fit.Nodes+1, fit.OnePerNode.String(), fit.Nodes))
			big := create(ctx, recreate(f, "too-big", int32(fit.Nodes+1), fit.OnePerNode.String()).Obj(), gang(nil))
			gomega.Eventually(ctx, func(ctx context.Context) ([]corev1.Pod, error) {
				return framework.ListPods(ctx, podsOf(f, big))
			}).WithTimeout(f.Timeouts.PodsBound).Should(gomega.HaveLen(fit.Nodes+1), "waiting for the ReplicaSet to create every pod")
			pg := podGroups(ctx, f)
			gomega.Expect(pg).To(gomega.HaveLen(1))
			framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{
				ClientSet: f.ClientSet, Namespace: f.Namespace, Name: pg[0].Name,
				Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse, Reason: "Unschedulable",
			})
			framework.ExpectNoPodBound(ctx, podsOf(f, big))
		})

		ginkgo.It("places a topology-constrained gang in a single domain", framework.ID("D-E3"),
			framework.WithFeatureGate(framework.TopologyAwareWorkloadScheduling), func(ctx context.Context) {
				key := framework.TestContext.TopologyKey
				domains := framework.NodesByLabel(ctx, f, key)
				if !framework.AnyDomainHasNodes(domains, 2) {
					ginkgo.Skip(fmt.Sprintf("needs a %s domain with at least 2 nodes; domains: %v", key, domains))
				}
				fit := framework.NodeSize(ctx, f)
				// 3/8 of a node per pod: four pods need two nodes, which only a
				// domain-aware placement keeps in one domain.
				d := create(ctx, recreate(f, "placed", 4, fit.Fraction(3, 8)).Obj(), withTopology(gang(nil), key))
				state := framework.WaitForPodsRunning(ctx, podsOf(f, d), 4)
				used := map[string]bool{}
				for _, node := range state.NodeOf {
					used[framework.DomainOf(domains, node)] = true
				}
				gomega.Expect(used).To(gomega.HaveLen(1), "the gang spans several %s domains: %s", key, state)
				gomega.Expect(len(framework.DistinctNodes(state))).To(gomega.BeNumerically(">=", 2), "the gang must span nodes to prove anything: %s", state)
			})

		ginkgo.It("keeps the user's minCount at zero replicas and re-forms the gang on a new PodGroup", framework.ID("D-E7"), func(ctx context.Context) {
			d := create(ctx, recreate(f, "zero-back", 3, "200m").Obj(), gang(ptr.To[int32](2)))
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 3)
			first := podGroups(ctx, f)
			gomega.Expect(first).To(gomega.HaveLen(1))

			// The Workload is at minCount 2 before the scale, so waiting for
			// that would prove nothing: wait for what the scale changes (the
			// pods and the PodGroup go), then hold minCount at 2 afterwards,
			// and check no write ever moved it.
			h := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource)
			gomega.Expect(scale(ctx, f, d, 0)).To(gomega.Succeed())
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 0)
			gomega.Eventually(ctx, func(ctx context.Context) []schedulingv1beta1.PodGroup {
				return podGroups(ctx, f)
			}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.BeEmpty(), "waiting for the PodGroup to be deleted at zero replicas")
			apps.KeepsState(ctx, f, apps.Deployment(d), "at zero replicas the Workload keeps the user's minCount 2", gomega.And(
				gomega.HaveField("Workloads", gomega.ConsistOf(gomega.HaveField("MinCount", int32(2)))), gomega.HaveField("PodGroups", gomega.BeEmpty())))
			h.Stop()
			for _, c := range h.Sorted() {
				gomega.Expect(c.MinCount).To(gomega.Equal(int32(2)), "a Workload write changed the user's minCount at zero replicas:\n%s", h)
			}

			gomega.Expect(scale(ctx, f, d, 3)).To(gomega.Succeed())
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 3)
			waitForGangState(ctx, f, d, 2, true)
			again := podGroups(ctx, f)
			gomega.Expect(again[0].Name).To(gomega.Equal(first[0].Name), "same revision, same PodGroup name")
			gomega.Expect(again[0].UID).NotTo(gomega.Equal(first[0].UID), "the PodGroup must have been deleted and recreated")
			framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{
				ClientSet: f.ClientSet, Namespace: f.Namespace, Name: again[0].Name,
				Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue,
			})
		})

		ginkgo.It("scales a running gang up without disturbing its pods; only new pods wait for the quorum", framework.ID("D-E8"), framework.Serial, func(ctx context.Context) {
			// Pods of a quarter of the smallest node: 4 fit anywhere; a node
			// holds at most MaxAllocatable/size of them, so the cluster at most
			// Nodes times that.
			fit := framework.MeasureCapacity(ctx, f)
			size := fit.Fraction(1, 4)
			d := create(ctx, recreate(f, "grow", 3, size).Obj(), gang(nil))
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 3)
			before := apps.Read(ctx, f, apps.Deployment(d))

			ginkgo.By("scaling to 4, which fits")
			gomega.Expect(scale(ctx, f, d, 4)).To(gomega.Succeed())
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 4)
			apps.ExpectPodsUndisturbed(apps.Read(ctx, f, apps.Deployment(d)), before)

			sizeQ := resource.MustParse(size)
			perNode := fit.MaxAllocatable.MilliValue() / sizeQ.MilliValue()
			huge := int32(fit.Nodes*int(perNode) + 4)
			ginkgo.By(fmt.Sprintf("scaling to %d, which cannot fit: new pods wait, old pods keep running", huge))
			gomega.Expect(scale(ctx, f, d, huge)).To(gomega.Succeed())
			waitForGangState(ctx, f, d, huge, true)
			gomega.Eventually(ctx, func(ctx context.Context) ([]corev1.Pod, error) {
				return framework.ListPods(ctx, podsOf(f, d))
			}).WithTimeout(f.Timeouts.PodsBound).Should(gomega.HaveLen(int(huge)))
			gomega.Consistently(ctx, func(ctx context.Context) (int, error) {
				s, err := framework.BindingState(ctx, podsOf(f, d))
				return s.Bound, err
			}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal(4),
				"only the 4 pods that ran before may be bound while the new quorum cannot be met")
			apps.ExpectPodsUndisturbed(apps.Read(ctx, f, apps.Deployment(d)), before)
		})

		ginkgo.It("replaces a deleted pod without recreating the PodGroup", framework.ID("D-E9"), func(ctx context.Context) {
			d := create(ctx, recreate(f, "replace", 3, "200m").Obj(), gang(nil))
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 3)
			pg := podGroups(ctx, f)
			gomega.Expect(pg).To(gomega.HaveLen(1))
			pods, err := framework.ListPods(ctx, podsOf(f, d))
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			victim := pods[0]
			gomega.Expect(f.ClientSet.CoreV1().Pods(f.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{})).To(gomega.Succeed())

			gomega.Eventually(ctx, func(ctx context.Context) (bool, error) {
				uids := podUIDs(ctx, f, d)
				return len(uids) == 3 && !uids[string(victim.UID)], nil
			}).WithTimeout(f.Timeouts.PodsBound).Should(gomega.BeTrue(), "waiting for a replacement of pod %s", victim.Name)
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 3)
			now := podGroups(ctx, f)
			gomega.Expect(now).To(gomega.HaveLen(1))
			gomega.Expect(now[0].UID).To(gomega.Equal(pg[0].UID), "the PodGroup was recreated")
			pods, err = framework.ListPods(ctx, podsOf(f, d))
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			for _, p := range pods {
				gomega.Expect(p.Spec.SchedulingGroup.PodGroupName).To(gomega.HaveValue(gomega.Equal(pg[0].Name)), "pod %s", p.Name)
			}
		})

		ginkgo.It("reports a gang that cannot be placed through the Deployment's conditions", framework.ID("D-E10"), framework.Serial, func(ctx context.Context) {
			fit := framework.MeasureCapacity(ctx, f)
			d := recreate(f, "stuck", int32(fit.Nodes+1), fit.OnePerNode.String()).ProgressDeadlineSeconds(10).Obj()
			d = create(ctx, d, gang(nil))
			expectReportedUnplaceable(ctx, f, d)
		})

		// KEP-6276, "Rack-local worker pool": "The team adds a topology
		// constraint on topology.kubernetes.io/rack. The scheduler places the
		// whole gang in a best-fit rack. If no single rack can satisfy the
		// request, the Deployment reports unavailable replicas through its
		// standard status conditions."
		ginkgo.It("reports a gang that fits the cluster but no single rack through the Deployment's conditions", framework.ID("D-E10"), framework.Serial,
			framework.WithFeatureGate(framework.TopologyAwareWorkloadScheduling), func(ctx context.Context) {
				key := framework.TestContext.TopologyKey
				fit := framework.MeasureCapacity(ctx, f)
				racks := framework.NodesByLabel(ctx, f, key)
				largest, labelled := 0, 0
				for _, nodes := range racks {
					largest = max(largest, len(nodes))
					labelled += len(nodes)
				}
				// One pod per node: the largest rack holds largest pods, the
				// labelled nodes together one more.
				pods := largest + 1
				if len(racks) < 2 || pods > labelled {
					ginkgo.Skip(fmt.Sprintf("needs two %s domains so that a gang can fit the cluster but no single domain; domains: %v", key, racks))
				}
				ginkgo.By(fmt.Sprintf("a gang of %d pods of %s, one per node, constrained to one %s: the largest holds %d, the cluster %d",
					pods, fit.OnePerNode.String(), key, largest, labelled))
				d := recreate(f, "no-rack", int32(pods), fit.OnePerNode.String()).ProgressDeadlineSeconds(10).Obj()
				d = create(ctx, d, withTopology(gang(nil), key))
				expectReportedUnplaceable(ctx, f, d)
			})
	})

// expectReportedUnplaceable waits for the Deployment's standard conditions to
// report a gang the scheduler cannot place, Available=False
// (MinimumReplicasUnavailable) and, past its short progressDeadlineSeconds,
// Progressing=False (ProgressDeadlineExceeded), with none of its pods bound
// meanwhile (a bound pod means the gang was placed after all: fail at once),
// and then holds that no pod binds.
func expectReportedUnplaceable(ctx context.Context, f *framework.Framework, d *appsv1.Deployment) {
	ginkgo.GinkgoHelper()
	gomega.Eventually(ctx, func(ctx context.Context) (map[appsv1.DeploymentConditionType]string, error) {
		if s, err := framework.BindingState(ctx, podsOf(f, d)); err == nil && s.Bound > 0 {
			return nil, gomega.StopTrying(fmt.Sprintf("pods of the gang were bound, so it was placed: %s", s))
		}
		got, err := f.ClientSet.AppsV1().Deployments(f.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		out := map[appsv1.DeploymentConditionType]string{}
		for _, c := range got.Status.Conditions {
			out[c.Type] = string(c.Status) + "/" + c.Reason
		}
		return out, nil
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.And(
		gomega.HaveKeyWithValue(appsv1.DeploymentAvailable, "False/MinimumReplicasUnavailable"),
		gomega.HaveKeyWithValue(appsv1.DeploymentProgressing, "False/ProgressDeadlineExceeded"),
	), "waiting for Available=False (MinimumReplicasUnavailable) and Progressing=False (ProgressDeadlineExceeded)")
	framework.ExpectNoPodBound(ctx, podsOf(f, d))
}
