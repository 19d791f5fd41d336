package statefulset

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// KEP-6277, Field Mapping and Opting in: what spec.scheduling compiles to,
// read back from the Workload and the PodGroup the controller made.

var _ = ginkgo.Describe("StatefulSet spec.scheduling field mapping", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("sts-mapping")

		ginkgo.It("gives a StatefulSet without spec.scheduling no Workload or PodGroup, and its pods no scheduling group", framework.ID("S-U1"), func(ctx context.Context) {
			set := create(ctx, parallel(f, "plain", 3, "100m").Obj(), nil)
			a := apps.StatefulSet(set)
			apps.WaitForUngrouped(ctx, f, a, 3)
			apps.KeepsState(ctx, f, a, "no Workload or PodGroup", apps.UngroupedOnly(3))
			gomega.Expect(apps.ListPodGroups(ctx, f)).To(gomega.BeEmpty(), "no PodGroup in the namespace")
		})

		ginkgo.It("resolves scheduling: {} to one Basic Workload template and PodGroup, without constraints, all-disruption or claims", framework.ID("S-U2"), func(ctx context.Context) {
			set := create(ctx, parallel(f, "empty", 2, "100m").Obj(), &framework.StatefulSetScheduling{})
			a := apps.StatefulSet(set)
			apps.WaitForGang(ctx, f, a, 0, 2)
			w := apps.TheWorkload(ctx, f, a)
			gomega.Expect(w.Spec.PodGroupTemplates).To(gomega.HaveLen(1))
			t := w.Spec.PodGroupTemplates[0]
			expectResolvedBasic(t.SchedulingPolicy, t.SchedulingConstraints, t.DisruptionMode, len(t.ResourceClaims), "the Workload template")
			pg := apps.ThePodGroup(ctx, f, &w)
			expectResolvedBasic(pg.Spec.SchedulingPolicy, pg.Spec.SchedulingConstraints, pg.Spec.DisruptionMode, len(pg.Spec.ResourceClaims), "the PodGroup")
			apps.ExpectPodsInGroup(ctx, f, a, apps.OwnerStatefulSet(set), &pg, 2)
		})

		ginkgo.DescribeTable("passes disruptionMode and the topology constraint through unchanged", framework.ID("S-U3"),
			framework.WithFeatureGate(framework.TopologyAwareWorkloadScheduling),
			func(ctx context.Context, set func(ns string) *builder.StatefulSetWrapper, cfg *framework.StatefulSetScheduling, want schedulingv1beta1.DisruptionMode) {
				key := framework.TestContext.TopologyKey
				a := apps.StatefulSet(create(ctx, set(f.Namespace).Obj(), withTopology(cfg, key)))
				w := apps.TheWorkload(ctx, f, a)
				pg := apps.ThePodGroup(ctx, f, &w)
				t := w.Spec.PodGroupTemplates[0]
				for what, got := range map[string]struct {
					c *schedulingv1beta1.PodGroupSchedulingConstraints
					d *schedulingv1beta1.DisruptionMode
				}{"the Workload template": {t.SchedulingConstraints, t.DisruptionMode}, "the PodGroup": {pg.Spec.SchedulingConstraints, pg.Spec.DisruptionMode}} {
					gomega.Expect(got.c).NotTo(gomega.BeNil(), "%s has no schedulingConstraints", what)
					gomega.Expect(got.c.Topology).To(gomega.HaveExactElements(gomega.HaveField("Key", key)), "%s: topology", what)
					gomega.Expect(got.d).To(gomega.HaveValue(gomega.Equal(want)), "%s: disruptionMode", what)
				}
			},
			ginkgo.Entry("gang with disruptionMode all", func(ns string) *builder.StatefulSetWrapper {
				return builder.StatefulSet("gang-all", ns).Replicas(2).Parallel()
			},
				withDisruption(gang(), true), schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}}),
			ginkgo.Entry("basic with disruptionMode single, OrderedReady", func(ns string) *builder.StatefulSetWrapper {
				return builder.StatefulSet("basic-single", ns).Replicas(2).OrderedReady()
			},
				withDisruption(basic(), false), schedulingv1beta1.DisruptionMode{Single: &schedulingv1beta1.SingleDisruptionMode{}}),
		)
	})

// withDisruption sets disruptionMode all (or single) on cfg.
func withDisruption(cfg *framework.StatefulSetScheduling, all bool) *framework.StatefulSetScheduling {
	if all {
		cfg.DisruptionMode = &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{All: &schedulingv1alpha3.WorkloadPodGroupAllDisruptionMode{}}
	} else {
		cfg.DisruptionMode = &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{Single: &schedulingv1alpha3.WorkloadPodGroupSingleDisruptionMode{}}
	}
	return cfg
}

// expectResolvedBasic asserts what scheduling: {} resolves to: the basic
// policy, no constraints, no claims, and no disruption mode beyond the
// API's default single.
func expectResolvedBasic(policy schedulingv1beta1.PodGroupSchedulingPolicy, constraints *schedulingv1beta1.PodGroupSchedulingConstraints,
	disruption *schedulingv1beta1.DisruptionMode, claims int, what string) {
	ginkgo.GinkgoHelper()
	gomega.Expect(policy.Basic).NotTo(gomega.BeNil(), "%s must be Basic: %+v", what, policy)
	gomega.Expect(policy.Gang).To(gomega.BeNil(), "%s must not be a gang", what)
	if constraints != nil {
		gomega.Expect(constraints.Topology).To(gomega.BeEmpty(), "%s: no topology constraint", what)
	}
	if disruption != nil {
		gomega.Expect(disruption.All).To(gomega.BeNil(), "%s: no all-disruption", what)
	}
	gomega.Expect(claims).To(gomega.BeZero(), "%s: no claims", what)
}
