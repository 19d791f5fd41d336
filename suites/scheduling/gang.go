package scheduling

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// gangLabel selects the pods of one gang within a spec's namespace.
const gangLabel = "was-harness.io/gang"

var _ = ginkgo.Describe("Gang scheduling on the harness cluster", framework.Harness,
	framework.WithFeatureGate(framework.GenericWorkload), func() {
		f := framework.New("gang")

		ginkgo.It("binds every pod of a gang that fits", func(ctx context.Context) {
			createPodGroup(ctx, f, builder.PodGroup("fits", f.Namespace).Gang(3).Obj())
			createGangPods(ctx, f, "fits", 0, 3, "500m")

			framework.WaitForPodsRunning(ctx, gangPods(f, "fits"), 3)
			framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{
				ClientSet: f.ClientSet, Namespace: f.Namespace, Name: "fits",
				Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue,
			})
		})

		ginkgo.It("binds no pod of a gang that only partly fits, and keeps it so", framework.Serial, func(ctx context.Context) {
			fit := framework.MeasureCapacity(ctx, f)
			// Each pod takes more than half of the largest node, so every node
			// holds at most one: one pod more than there are nodes cannot all fit,
			// while all but one of them would.
			size := int32(fit.Nodes + 1)
			ginkgo.By(fmt.Sprintf("creating a gang of %d pods of %s CPU on %d nodes", size, fit.OnePerNode.String(), fit.Nodes))
			createPodGroup(ctx, f, builder.PodGroup("too-big", f.Namespace).Gang(size).Obj())
			createGangPods(ctx, f, "too-big", 0, int(size), fit.OnePerNode.String())

			framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{
				ClientSet: f.ClientSet, Namespace: f.Namespace, Name: "too-big",
				Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse, Reason: "Unschedulable",
			})
			framework.ExpectNoPodBound(ctx, gangPods(f, "too-big"))
		})

		ginkgo.It("binds late pods together once the quorum is there", func(ctx context.Context) {
			createPodGroup(ctx, f, builder.PodGroup("late", f.Namespace).Gang(3).Obj())
			createGangPods(ctx, f, "late", 0, 2, "100m")
			ginkgo.By("two of three pods wait for the quorum")
			framework.ExpectNoPodBound(ctx, gangPods(f, "late"))

			ginkgo.By("the third pod arrives")
			createGangPods(ctx, f, "late", 2, 1, "100m")
			framework.WaitForPodsRunning(ctx, gangPods(f, "late"), 3)
		})

		ginkgo.It("places a topology-constrained gang in a single domain",
			framework.WithFeatureGate(framework.TopologyAwareWorkloadScheduling), func(ctx context.Context) {
				key := framework.TestContext.TopologyKey
				domains := framework.NodesByLabel(ctx, f, key)
				fit := framework.NodeSize(ctx, f)
				// 3/8 of a node per pod: two pods per node, so four pods need two
				// nodes. Without the constraint the scheduler spreads them.
				perPod := fit.Fraction(3, 8)
				if !framework.AnyDomainHasNodes(domains, 2) {
					ginkgo.Skip(fmt.Sprintf("needs a %s domain with at least 2 nodes; domains: %v", key, domains))
				}

				workload := builder.Workload("placed", f.Namespace).
					PodGroupTemplate(builder.PodGroupTemplate("workers").Gang(4).Topology(key)).Obj()
				created, err := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).Create(ctx, workload, metav1.CreateOptions{})
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating Workload %s", workload.Name)
				// The PodGroup is stamped from the Workload's template the way
				// workload controllers do it, with the upstream builder.
				pg, err := workloadbuilder.NewBuilderFromExistingWorkload(created, workloadbuilder.BuildOptions{}).NewPodGroup("placed", "workers")
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				createPodGroup(ctx, f, pg)
				createGangPods(ctx, f, "placed", 0, 4, perPod)

				state := framework.WaitForPodsRunning(ctx, gangPods(f, "placed"), 4)
				used := map[string]bool{}
				for _, node := range state.NodeOf {
					used[framework.DomainOf(domains, node)] = true
				}
				gomega.Expect(used).To(gomega.HaveLen(1), "pods of the gang span several %s domains: %s", key, state)
				gomega.Expect(len(framework.DistinctNodes(state))).To(gomega.BeNumerically(">=", 2),
					"the spec needs the gang to span nodes to prove anything: %s", state)
			})
	})

func createPodGroup(ctx context.Context, f *framework.Framework, pg *schedulingv1beta1.PodGroup) {
	_, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).Create(ctx, pg, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating PodGroup %s", pg.Name)
}

// createGangPods creates count pods of the gang, numbered from first.
func createGangPods(ctx context.Context, f *framework.Framework, gang string, first, count int, cpu string) {
	for i := first; i < first+count; i++ {
		pod := builder.Pod(fmt.Sprintf("%s-%d", gang, i), f.Namespace).
			Label(gangLabel, gang).SchedulingGroup(gang).Request(corev1.ResourceCPU, cpu).Obj()
		_, err := f.ClientSet.CoreV1().Pods(f.Namespace).Create(ctx, pod, metav1.CreateOptions{})
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating pod %s", pod.Name)
	}
}

func gangPods(f *framework.Framework, gang string) framework.PodsInput {
	return framework.PodsInput{ClientSet: f.ClientSet, Namespace: f.Namespace, LabelSelector: gangLabel + "=" + gang}
}
