package statefulset

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
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// preemptorLabel marks the plain high-priority pod a preemption spec submits.
const preemptorLabel = "was-harness.io/preemptor"

var _ = ginkgo.Describe("StatefulSet gangs under preemption", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		// Registered before New, so the PriorityClasses are deleted only
		// after the namespace's pods are gone.
		ginkgo.BeforeEach(framework.EnsurePriorityClasses)
		f := framework.New("sts-preempt")

		// Every spec fills each node with one low-priority pod of just over
		// half a node; the preemptor's pods are as big, so each needs one
		// node freed: anything evicted beyond that is the disruption mode.

		ginkgo.It("lets a higher-priority pod preempt the whole disruptionMode-all StatefulSet, not a subset", framework.ID("S-I3"), framework.Serial, func(ctx context.Context) {
			fit := framework.MeasureCapacity(ctx, f)
			requireNodes(fit, 2)
			set := lowPriorityGang(ctx, f, fit, true)

			ginkgo.By(fmt.Sprintf("one pod of %s CPU at priority %s, which needs one node", fit.OnePerNode.String(), framework.PriorityHigh))
			w := framework.Preempt(ctx, framework.PreemptionInput{
				Victims: apps.Pods(f, apps.StatefulSet(set)),
				Submit: func(ctx context.Context) {
					p := builder.Pod("preemptor", f.Namespace).Label(preemptorLabel, "true").PriorityClass(framework.PriorityHigh).
						Request(corev1.ResourceCPU, fit.OnePerNode.String()).Obj()
					_, err := f.ClientSet.CoreV1().Pods(f.Namespace).Create(ctx, p, metav1.CreateOptions{})
					gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating the preemptor pod")
				},
				Preemptor:     framework.PodsInput{ClientSet: f.ClientSet, Namespace: f.Namespace, LabelSelector: preemptorLabel + "=true"},
				PreemptorPods: 1,
			})
			w.ExpectEvicted(ctx, apps.Pods(f, apps.StatefulSet(set)), fit.Nodes)
		})

		// Upstream's 1.37 e2e "should preempt entire group with All disruption
		// mode by a pod group", with both groups made by the StatefulSet
		// controller; the single entry is the control: a gang of two then
		// evicts only the two pods it needs.
		ginkgo.DescribeTable("lets a higher-priority gang StatefulSet preempt", framework.ID("S-E2"), framework.Serial,
			func(ctx context.Context, all bool, want func(fit framework.Capacity) int) {
				fit := framework.MeasureCapacity(ctx, f)
				requireNodes(fit, 3)
				set := lowPriorityGang(ctx, f, fit, all)

				ginkgo.By(fmt.Sprintf("a gang StatefulSet of 2 pods of %s CPU at priority %s, which needs two nodes", fit.OnePerNode.String(), framework.PriorityHigh))
				var high *appsv1.StatefulSet
				w := framework.Preempt(ctx, framework.PreemptionInput{
					Victims: apps.Pods(f, apps.StatefulSet(set)),
					Submit: func(ctx context.Context) {
						high = create(ctx, parallel(f, "preemptor", 2, fit.OnePerNode.String()).PodTemplate(func(p *builder.PodWrapper) {
							p.PriorityClass(framework.PriorityHigh)
						}).Obj(), gang())
					},
					Preemptor:     framework.PodsInput{ClientSet: f.ClientSet, Namespace: f.Namespace, LabelSelector: builder.AppLabel + "=preemptor"},
					PreemptorPods: 2,
				})
				w.ExpectEvicted(ctx, apps.Pods(f, apps.StatefulSet(set)), want(fit))
				gomega.Expect(framework.DistinctNodes(w.Preemptor)).To(gomega.HaveLen(2), "the preemptor gang: %s", w.Preemptor)
				hw := apps.TheWorkload(ctx, f, apps.StatefulSet(high))
				hpg := apps.ThePodGroup(ctx, f, &hw)
				framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{
					ClientSet: f.ClientSet, Namespace: f.Namespace, Name: hpg.Name,
					Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue,
				})
			},
			ginkgo.Entry("disruptionMode all: the whole StatefulSet goes", true, func(fit framework.Capacity) int { return fit.Nodes }),
			ginkgo.Entry("disruptionMode single (control): only the two pods the gang needs", false, func(framework.Capacity) int { return 2 }),
		)
	})

// lowPriorityGang creates a Parallel gang StatefulSet of one pod per node at
// PriorityLow with disruptionMode all (or single), waits until it runs, and
// checks its PodGroup carries the mode and the template's priority. The 1.37
// scheduler sets no DisruptionTarget condition on a PodGroup (only on its
// victim pods), so nothing is asserted about the PodGroup's status.
func lowPriorityGang(ctx context.Context, f *framework.Framework, fit framework.Capacity, all bool) *appsv1.StatefulSet {
	cfg := gang()
	cfg.DisruptionMode = &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{Single: &schedulingv1alpha3.WorkloadPodGroupSingleDisruptionMode{}}
	want := schedulingv1beta1.DisruptionMode{Single: &schedulingv1beta1.SingleDisruptionMode{}}
	if all {
		cfg.DisruptionMode = &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{All: &schedulingv1alpha3.WorkloadPodGroupAllDisruptionMode{}}
		want = schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}}
	}
	ginkgo.By(fmt.Sprintf("a gang StatefulSet of %d pods of %s CPU at priority %s, disruptionMode %s", fit.Nodes, fit.OnePerNode.String(), framework.PriorityLow, map[bool]string{true: "all", false: "single"}[all]))
	set := create(ctx, parallel(f, "victims", int32(fit.Nodes), fit.OnePerNode.String()).PodTemplate(func(p *builder.PodWrapper) {
		p.PriorityClass(framework.PriorityLow)
	}).Obj(), cfg)
	apps.WaitForRunning(ctx, f, apps.StatefulSet(set), fit.Nodes)

	w := apps.TheWorkload(ctx, f, apps.StatefulSet(set))
	pg := apps.ThePodGroup(ctx, f, &w)
	gomega.ExpectWithOffset(1, pg.Spec.DisruptionMode).To(gomega.HaveValue(gomega.Equal(want)), "PodGroup %s disruptionMode", pg.Name)
	low, err := f.ClientSet.SchedulingV1().PriorityClasses().Get(ctx, framework.PriorityLow, metav1.GetOptions{})
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	gomega.ExpectWithOffset(1, pg.Spec.PriorityClassName).To(gomega.Equal(framework.PriorityLow), "PodGroup %s priorityClassName (from the pod template)", pg.Name)
	gomega.ExpectWithOffset(1, pg.Spec.Priority).To(gomega.HaveValue(gomega.Equal(low.Value)), "PodGroup %s priority", pg.Name)
	return set
}
