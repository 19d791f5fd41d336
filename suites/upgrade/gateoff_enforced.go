package upgrade

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// gateOffPreemptorLabel marks the plain high-priority pod of the spec below.
const gateOffPreemptorLabel = "was-harness.io/gate-off-preemptor"

// KEP-6277, "Are there any tests for feature enablement/disablement?": "Gate
// toggled off: Workload template and PodGroup minCount are no longer updated
// on scale, and the pre-existing PodGroup is still honored by the scheduler";
// Upgrade / Downgrade Strategy: "as long as GenericWorkload is enabled in
// kube-scheduler and pods reference the PodGroups, the scheduler keeps
// enforcing their gang, topology, and disruption semantics". The toggle spec
// above checks the first half; this one checks the scheduler still acts on
// the group: the pods that name a disruptionMode-all PodGroup are preempted
// together, with the controller side off, as S-I3 has it with the gate on. A
// PodGroup the controller deleted, released or changed when its gate went off
// would leave them to be preempted one by one.
var _ = ginkgo.Describe("WorkloadWithStatefulSet off on the controller side, existing PodGroups", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), framework.Serial, framework.Disruptive, func() {
		// Registered before New, so the PriorityClasses are deleted only
		// after the namespace's pods are gone.
		ginkgo.BeforeEach(framework.EnsurePriorityClasses)
		f := framework.New("sts-gate-enforced")

		ginkgo.It("are still enforced by the scheduler: a disruptionMode-all gang is preempted whole", framework.ID("S-P4"), func(ctx context.Context) {
			framework.RequireReconfigure()
			fit := framework.MeasureCapacity(ctx, f)
			if fit.Nodes < 2 {
				ginkgo.Skip(fmt.Sprintf("needs at least 2 schedulable nodes (a preemptor that takes one, a gang that loses more), the cluster has %d", fit.Nodes))
			}

			// One low-priority pod of just over half a node on every node: the
			// preemptor, as big, needs one node freed; anything evicted beyond
			// that pod is the PodGroup's disruption mode at work.
			ginkgo.By(fmt.Sprintf("gate on: a gang StatefulSet of %d pods of %s, one per node, at priority %s, disruptionMode all", fit.Nodes, fit.OnePerNode.String(), framework.PriorityLow))
			cfg := gangStatefulSet()
			cfg.DisruptionMode = &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{All: &schedulingv1alpha3.WorkloadPodGroupAllDisruptionMode{}}
			set := builder.StatefulSet("victims", f.Namespace).Replicas(int32(fit.Nodes)).Parallel().Request(corev1.ResourceCPU, fit.OnePerNode.String()).
				PodTemplate(func(p *builder.PodWrapper) { p.PriorityClass(framework.PriorityLow) }).Obj()
			set, err := framework.Intent.CreateStatefulSet(ctx, set, cfg)
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating StatefulSet victims")
			g := apps.StatefulSet(set)
			apps.WaitForRunning(ctx, f, g, fit.Nodes)
			before := apps.WaitForGang(ctx, f, g, int32(fit.Nodes), fit.Nodes)
			w := apps.TheWorkload(ctx, f, g)
			pg := apps.ThePodGroup(ctx, f, &w)
			gomega.Expect(pg.Spec.DisruptionMode).To(gomega.HaveValue(gomega.Equal(schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}})),
				"PodGroup %s disruptionMode", pg.Name)

			framework.Reconfigure(ctx, framework.ReconfigureInput{
				Changes: framework.GateOn(framework.WorkloadWithStatefulSet, false, framework.ReferenceControllerManager)})

			ginkgo.By("gate off: the pods still name the same PodGroup, which stays as it was")
			apps.KeepsState(ctx, f, g, fmt.Sprintf("its Workload and PodGroup at minCount %d, and its %d pods all in it", fit.Nodes, fit.Nodes),
				apps.Gang(int32(fit.Nodes), fit.Nodes))
			now := apps.Read(ctx, f, g)
			apps.ExpectSameObjects(now, before)
			apps.ExpectPodsUndisturbed(now, before)

			ginkgo.By(fmt.Sprintf("gate off: one pod of %s CPU at priority %s, which needs one node, preempts the whole group", fit.OnePerNode.String(), framework.PriorityHigh))
			watch := framework.Preempt(ctx, framework.PreemptionInput{
				Victims: apps.Pods(f, g),
				Submit: func(ctx context.Context) {
					p := builder.Pod("preemptor", f.Namespace).Label(gateOffPreemptorLabel, "true").PriorityClass(framework.PriorityHigh).
						Request(corev1.ResourceCPU, fit.OnePerNode.String()).Obj()
					_, err := f.ClientSet.CoreV1().Pods(f.Namespace).Create(ctx, p, metav1.CreateOptions{})
					gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating the preemptor pod")
				},
				Preemptor:     framework.PodsInput{ClientSet: f.ClientSet, Namespace: f.Namespace, LabelSelector: gateOffPreemptorLabel + "=true"},
				PreemptorPods: 1,
			})
			watch.ExpectEvicted(ctx, apps.Pods(f, g), fit.Nodes)
		})
	})
