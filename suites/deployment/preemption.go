package deployment

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// preemptorLabel marks the high-priority pods a preemption spec submits.
const preemptorLabel = "was-harness.io/preemptor"

var _ = ginkgo.Describe("Deployment gangs under preemption", framework.KEP(6276),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment), func() {
		// Registered before New, so the PriorityClasses are deleted only
		// after the namespace's pods are gone.
		ginkgo.BeforeEach(framework.EnsurePriorityClasses)
		f := framework.New("deploy-preempt")

		// The gang fills every node (one pod of just over half a node each);
		// a high-priority pod of the same size then fits only by preemption,
		// and one evicted pod would free enough for it.
		ginkgo.DescribeTable("evicts one pod of a single-mode gang and every pod of an all-mode gang", framework.ID("D-E4"), framework.Serial,
			func(ctx context.Context, all bool) {
				fit := framework.MeasureCapacity(ctx, f)
				if fit.Nodes < 2 {
					ginkgo.Skip("needs at least 2 schedulable nodes to tell one victim from the whole gang")
				}
				n := int32(fit.Nodes)
				cfg := gang(nil)
				cfg.DisruptionMode = &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{Single: &schedulingv1alpha3.WorkloadPodGroupSingleDisruptionMode{}}
				if all {
					cfg.DisruptionMode = &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{All: &schedulingv1alpha3.WorkloadPodGroupAllDisruptionMode{}}
				}
				ginkgo.By(fmt.Sprintf("a %s gang of %d pods of %s CPU at priority %s on %d nodes", disruptionName(all), n, fit.OnePerNode.String(), framework.PriorityLow, fit.Nodes))
				d := recreate(f, "victims", n, fit.OnePerNode.String()).PodTemplate(func(p *builder.PodWrapper) {
					p.PriorityClass(framework.PriorityLow)
				}).Obj()
				d = create(ctx, d, cfg)
				framework.WaitForPodsRunning(ctx, podsOf(f, d), int(n))
				expectVictimPodGroup(ctx, f, d, all)

				ginkgo.By(fmt.Sprintf("a pod of %s CPU at priority %s, which fits only by preemption", fit.OnePerNode.String(), framework.PriorityHigh))
				preemptors := framework.PodsInput{ClientSet: f.ClientSet, Namespace: f.Namespace, LabelSelector: preemptorLabel + "=true"}
				w := framework.Preempt(ctx, framework.PreemptionInput{
					Victims: podsOf(f, d),
					Submit: func(ctx context.Context) {
						p := builder.Pod("preemptor", f.Namespace).Label(preemptorLabel, "true").PriorityClass(framework.PriorityHigh).
							Request(corev1.ResourceCPU, fit.OnePerNode.String()).Obj()
						_, err := f.ClientSet.CoreV1().Pods(f.Namespace).Create(ctx, p, metav1.CreateOptions{})
						gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating the preemptor pod")
					},
					Preemptor: preemptors, PreemptorPods: 1,
				})
				want := 1
				if all {
					want = int(n)
				}
				o := w.ExpectEvicted(ctx, podsOf(f, d), want)
				node := w.Preemptor.NodeOf["preemptor"]
				gomega.Expect(o.Evicted).To(gomega.ContainElement(gomega.HaveSuffix("@"+node)),
					"the preemptor runs on %s, where no victim was evicted: %s", node, o)
			},
			ginkgo.Entry("disruptionMode single: one victim, the others keep running", false),
			ginkgo.Entry("disruptionMode all: the whole gang", true),
		)
	})

func disruptionName(all bool) string {
	if all {
		return "disruptionMode all"
	}
	return "disruptionMode single"
}

// expectVictimPodGroup asserts the gang's one PodGroup carries the requested
// disruptionMode and the pod template's priority. The 1.37 scheduler sets no
// DisruptionTarget condition on a PodGroup (only on its victim pods), so
// nothing is asserted about the PodGroup's status here.
func expectVictimPodGroup(ctx context.Context, f *framework.Framework, d *appsv1.Deployment, all bool) {
	pgs := podGroups(ctx, f)
	gomega.ExpectWithOffset(1, pgs).To(gomega.HaveLen(1), "the gang Deployment must have one PodGroup")
	pg := pgs[0]
	want := schedulingv1beta1.DisruptionMode{Single: &schedulingv1beta1.SingleDisruptionMode{}}
	if all {
		want = schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}}
	}
	gomega.ExpectWithOffset(1, pg.Spec.DisruptionMode).To(gomega.HaveValue(gomega.Equal(want)), "PodGroup %s disruptionMode", pg.Name)
	low, err := f.ClientSet.SchedulingV1().PriorityClasses().Get(ctx, framework.PriorityLow, metav1.GetOptions{})
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	gomega.ExpectWithOffset(1, pg.Spec.PriorityClassName).To(gomega.Equal(framework.PriorityLow), "PodGroup %s priorityClassName (from the pod template)", pg.Name)
	gomega.ExpectWithOffset(1, pg.Spec.Priority).To(gomega.HaveValue(gomega.Equal(low.Value)), "PodGroup %s priority", pg.Name)
}
