package statefulset

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
)

var _ = ginkgo.Describe("StatefulSet gangs on the scheduler", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("sts-gang")

		ginkgo.It("binds no pod of a gang until the whole group fits, then binds them all", framework.ID("S-I2"), framework.Serial, func(ctx context.Context) {
			fit := framework.MeasureCapacity(ctx, f)
			requireNodes(fit, 2)
			// Every node but one holds a blocker of just over half its CPU,
			// so exactly one pod of that size still fits: a gang of two does
			// not, though one of its pods would.
			ginkgo.By(fmt.Sprintf("taking %d of %d nodes with blocker pods of %s CPU", fit.Nodes-1, fit.Nodes, fit.OnePerNode.String()))
			blockers := createBlockers(ctx, f, fit.Nodes-1, fit.OnePerNode.String())

			set := create(ctx, parallel(f, "waits", 2, fit.OnePerNode.String()).Obj(), gang())
			apps.WaitForPodsCreated(ctx, f, apps.StatefulSet(set), 2)
			w := apps.TheWorkload(ctx, f, apps.StatefulSet(set))
			pg := apps.ThePodGroup(ctx, f, &w)
			gomega.Expect(framework.PodGroupMinCount(&pg)).To(gomega.Equal(int32(2)))
			framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{
				ClientSet: f.ClientSet, Namespace: f.Namespace, Name: pg.Name,
				Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse, Reason: "Unschedulable",
			})
			framework.ExpectNoPodBound(ctx, apps.Pods(f, apps.StatefulSet(set)))

			ginkgo.By("freeing one more node: now the whole gang fits")
			gomega.Expect(f.ClientSet.CoreV1().Pods(f.Namespace).Delete(ctx, "blocker-0", metav1.DeleteOptions{})).To(gomega.Succeed())
			framework.WaitForPodsRunning(ctx, blockers, fit.Nodes-2)
			state := apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 2)
			gomega.Expect(framework.DistinctNodes(state)).To(gomega.HaveLen(2), "one pod per node: %s", state)
			framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{
				ClientSet: f.ClientSet, Namespace: f.Namespace, Name: pg.Name,
				Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue,
			})
			apps.ExpectPodsInGroup(ctx, f, apps.StatefulSet(set), apps.OwnerStatefulSet(set), &pg, 2)
		})

		ginkgo.It("places a topology-constrained StatefulSet in a single domain", framework.ID("S-I4", "S-E3"),
			framework.WithFeatureGate(framework.TopologyAwareWorkloadScheduling), func(ctx context.Context) {
				key := framework.TestContext.TopologyKey
				domains := framework.NodesByLabel(ctx, f, key)
				if !framework.AnyDomainHasNodes(domains, 2) {
					ginkgo.Skip(fmt.Sprintf("needs a %s domain with at least 2 nodes; domains: %v", key, domains))
				}
				fit := framework.NodeSize(ctx, f)
				// 3/8 of a node per pod: four pods need two nodes, which only a
				// domain-aware placement keeps in one domain.
				set := create(ctx, parallel(f, "placed", 4, fit.Fraction(3, 8)).Obj(), withTopology(gang(), key))
				state := apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 4)

				w := apps.TheWorkload(ctx, f, apps.StatefulSet(set))
				pg := apps.ThePodGroup(ctx, f, &w)
				gomega.Expect(pg.Spec.SchedulingConstraints).NotTo(gomega.BeNil(), "the PodGroup has no schedulingConstraints")
				gomega.Expect(pg.Spec.SchedulingConstraints.Topology).To(gomega.HaveExactElements(gomega.HaveField("Key", key)),
					"the PodGroup must carry the StatefulSet's topology constraint")
				apps.ExpectPodsInGroup(ctx, f, apps.StatefulSet(set), apps.OwnerStatefulSet(set), &pg, 4)
				used := map[string]bool{}
				for _, node := range state.NodeOf {
					used[framework.DomainOf(domains, node)] = true
				}
				gomega.Expect(used).To(gomega.HaveLen(1), "the StatefulSet spans several %s domains: %s", key, state)
				gomega.Expect(len(framework.DistinctNodes(state))).To(gomega.BeNumerically(">=", 2), "the pods must span nodes to prove anything: %s", state)
			})

		ginkgo.It("binds all pods of a Parallel gang that fits, and none of one that does not", framework.ID("S-E1"), framework.Serial, func(ctx context.Context) {
			fit := framework.MeasureCapacity(ctx, f)
			ginkgo.By(fmt.Sprintf("a gang of %d pods of %s CPU on %d nodes binds completely", fit.Nodes, fit.OnePerNode.String(), fit.Nodes))
			fits := create(ctx, parallel(f, "fits", int32(fit.Nodes), fit.OnePerNode.String()).Obj(), gang())
			state := apps.WaitForRunning(ctx, f, apps.StatefulSet(fits), fit.Nodes)
			gomega.Expect(framework.DistinctNodes(state)).To(gomega.HaveLen(fit.Nodes), "one pod per node: %s", state)
			fw := apps.TheWorkload(ctx, f, apps.StatefulSet(fits))
			fpg := apps.ThePodGroup(ctx, f, &fw)
			framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{
				ClientSet: f.ClientSet, Namespace: f.Namespace, Name: fpg.Name,
				Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue,
			})
			apps.Scale(ctx, f, apps.StatefulSet(fits), 0)
			apps.WaitForRunning(ctx, f, apps.StatefulSet(fits), 0)

			ginkgo.By(fmt.Sprintf("a gang of %d pods of %s CPU on %d nodes binds nothing", fit.Nodes+1, fit.OnePerNode.String(), fit.Nodes))
			big := create(ctx, parallel(f, "too-big", int32(fit.Nodes+1), fit.OnePerNode.String()).Obj(), gang())
			apps.WaitForPodsCreated(ctx, f, apps.StatefulSet(big), fit.Nodes+1)
			bw := apps.TheWorkload(ctx, f, apps.StatefulSet(big))
			bpg := apps.ThePodGroup(ctx, f, &bw)
			framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{
				ClientSet: f.ClientSet, Namespace: f.Namespace, Name: bpg.Name,
				Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse, Reason: "Unschedulable",
			})
			framework.ExpectNoPodBound(ctx, apps.Pods(f, apps.StatefulSet(big)))
		})

		ginkgo.It("binds no pod of a gang when the free capacity is short of the whole group", framework.ID("S-E10"), framework.Serial, func(ctx context.Context) {
			fit := framework.MeasureCapacity(ctx, f)
			requireNodes(fit, 2)
			taken := fit.Nodes / 2
			free := fit.Nodes - taken
			ginkgo.By(fmt.Sprintf("taking %d of %d nodes with other pods; a gang of %d pods of %s CPU needs %d", taken, fit.Nodes, free+1, fit.OnePerNode.String(), free+1))
			blockers := createBlockers(ctx, f, taken, fit.OnePerNode.String())
			held, err := framework.BindingState(ctx, blockers)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())

			set := create(ctx, parallel(f, "short", int32(free+1), fit.OnePerNode.String()).Obj(), gang())
			apps.WaitForPodsCreated(ctx, f, apps.StatefulSet(set), free+1)
			w := apps.TheWorkload(ctx, f, apps.StatefulSet(set))
			pg := apps.ThePodGroup(ctx, f, &w)
			cond := framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{
				ClientSet: f.ClientSet, Namespace: f.Namespace, Name: pg.Name,
				Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse, Reason: "Unschedulable",
			})
			logf("PodGroup %s: %s=%s (%s): %s", pg.Name, cond.Type, cond.Status, cond.Reason, cond.Message)
			framework.ExpectNoPodBound(ctx, apps.Pods(f, apps.StatefulSet(set)))

			ginkgo.By("the other pods were left where they were")
			now, err := framework.BindingState(ctx, blockers)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(now.NodeOf).To(gomega.Equal(held.NodeOf), "the blocker pods moved or went: before %s, now %s", held, now)
			gomega.Expect(now.Running).To(gomega.Equal(taken), "blockers: %s", now)
		})
	})
