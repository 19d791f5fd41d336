package deployment

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
)

// KEP-6276, Mutability and Validation: "All spec.scheduling fields are
// immutable after creation" except gang.minCount, "which is mutable to support
// scaling"; spec.scheduling itself is +k8s:update=NoSet/NoUnset, and the
// building blocks' constraints, disruptionMode and resourceClaims are
// +k8s:immutable. These specs take every update transition D-V2's spec does
// not, each from a Deployment created with the state it changes, and check the
// decision and the field the rejection names. Every write goes through
// framework.Intent, so the same specs test the native field and the
// reference's annotation.

// intentChange rewrites a stored intent (it may return nil to remove it).
type intentChange func(cfg *framework.DeploymentScheduling) *framework.DeploymentScheduling

var _ = ginkgo.Describe("Deployment spec.scheduling update transitions", framework.KEP(6276),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment), func() {
		f := framework.New("deploy-transitions")

		// updateIntent applies change to the stored Deployment's intent.
		updateIntent := func(ctx context.Context, d *appsv1.Deployment, change intentChange) error {
			_, err := framework.Intent.UpdateDeployment(ctx, f.Namespace, d.Name, func(_ *appsv1.Deployment, cfg **framework.DeploymentScheduling) {
				*cfg = change(*cfg)
			})
			return err
		}

		ginkgo.DescribeTable("rejects a change of the frozen part of spec.scheduling, names the field, and stores nothing", framework.ID("D-V2", "D-U4"),
			func(ctx context.Context, created *framework.DeploymentScheduling, change intentChange, field string) {
				d := create(ctx, recreate(f, "frozen", 3, "100m").Obj(), created)
				before, err := framework.Intent.DeploymentScheduling(ctx, f.Namespace, d.Name)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())

				expectRejected(updateIntent(ctx, d, change), rejected, field)

				after, err := framework.Intent.DeploymentScheduling(ctx, f.Namespace, d.Name)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				gomega.Expect(after).To(gomega.Equal(before), "the rejected change was stored (or the stored intent changed otherwise)")
			},
			ginkgo.Entry("adding a gang spec.scheduling to a Deployment created without it (NoSet)",
				nil, setTo(gang(nil)), "spec.scheduling"),
			ginkgo.Entry("adding a basic spec.scheduling to a Deployment created without it (NoSet)",
				nil, setTo(&framework.DeploymentScheduling{}), "spec.scheduling"),
			ginkgo.Entry("removing a basic spec.scheduling (NoUnset)",
				&framework.DeploymentScheduling{}, setTo(nil), "spec.scheduling"),
			ginkgo.Entry("switching basic to gang",
				basic(), setTo(gang(nil)), "spec.scheduling.schedulingPolicy"),
			ginkgo.Entry("clearing a gang schedulingPolicy",
				gang(nil), func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
					c.SchedulingPolicy = nil
					return c
				}, "spec.scheduling.schedulingPolicy"),
			ginkgo.Entry("changing the topology key",
				withTopology(gang(nil), "topology.kubernetes.io/zone"), func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
					return withTopology(c, "kubernetes.io/hostname")
				}, "spec.scheduling.schedulingConstraints"),
			ginkgo.Entry("removing the topology constraint",
				withTopology(gang(nil), "topology.kubernetes.io/zone"), func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
					c.SchedulingConstraints = nil
					return c
				}, "spec.scheduling.schedulingConstraints"),
			ginkgo.Entry("changing disruptionMode single to all",
				withDisruption(gang(nil), false), func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
					return withDisruption(c, true)
				}, "spec.scheduling.disruptionMode"),
			ginkgo.Entry("changing disruptionMode all to single",
				withDisruption(gang(nil), true), func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
					return withDisruption(c, false)
				}, "spec.scheduling.disruptionMode"),
			ginkgo.Entry("removing disruptionMode all",
				withDisruption(gang(nil), true), func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
					c.DisruptionMode = nil
					return c
				}, "spec.scheduling.disruptionMode"),
			ginkgo.Entry("changing a claim's ResourceClaimTemplate",
				withClaims(gang(nil), templateClaim("gpu", "gpu")), func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
					return withClaims(c, templateClaim("gpu", "other-gpu"))
				}, "spec.scheduling.resourceClaims"),
			ginkgo.Entry("switching a claim from a template to a named ResourceClaim",
				withClaims(gang(nil), templateClaim("gpu", "gpu")), func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
					return withClaims(c, namedClaim("gpu", "shared-gpu"))
				}, "spec.scheduling.resourceClaims"),
			ginkgo.Entry("renaming a claim",
				withClaims(gang(nil), templateClaim("gpu", "gpu")), func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
					return withClaims(c, templateClaim("accelerator", "gpu"))
				}, "spec.scheduling.resourceClaims"),
			ginkgo.Entry("adding a second claim",
				withClaims(gang(nil), templateClaim("gpu", "gpu")), func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
					return withClaims(c, templateClaim("gpu", "gpu"), templateClaim("nic", "nic"))
				}, "spec.scheduling.resourceClaims"),
			ginkgo.Entry("removing every claim",
				withClaims(gang(nil), templateClaim("gpu", "gpu")), func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
					return withClaims(c)
				}, "spec.scheduling.resourceClaims"),
		)

		// gang.minCount is the one mutable field: lowering it, unsetting it
		// (gang: {} makes it follow replicas) and setting it are accepted, and
		// the Workload template and the PodGroup follow the new resolved value.
		ginkgo.DescribeTable("accepts a change of gang.minCount and reconciles the Workload and PodGroup to it", framework.ID("D-V2", "D-I3"),
			func(ctx context.Context, from *int32, to *int32, wantBefore, wantAfter int32) {
				d := create(ctx, recreate(f, "mincount", 3, "100m").Obj(), gang(from))
				waitForGangState(ctx, f, d, wantBefore, true)

				gomega.Expect(updateIntent(ctx, d, func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
					c.SchedulingPolicy.Gang.MinCount = to
					return c
				})).To(gomega.Succeed(), "gang.minCount is mutable")
				stored, err := framework.Intent.DeploymentScheduling(ctx, f.Namespace, d.Name)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				gomega.Expect(stored.ExplicitMinCount()).To(gomega.Equal(to), "the stored gang.minCount")
				waitForGangState(ctx, f, d, wantAfter, true)

				if from != nil && (to == nil || *to < *from) {
					ginkgo.By(fmt.Sprintf("scaling below the old floor %d is accepted now", *from))
					gomega.Expect(scale(ctx, f, d, *from-1)).To(gomega.Succeed())
					want := *from - 1
					if to != nil {
						want = *to
					}
					waitForGangState(ctx, f, d, want, true)
				}
			},
			ginkgo.Entry("lowering an explicit minCount 3 -> 1", ptr.To[int32](3), ptr.To[int32](1), int32(3), int32(1)),
			ginkgo.Entry("unsetting an explicit minCount 2 (it then follows replicas, 3)", ptr.To[int32](2), nil, int32(2), int32(3)),
			ginkgo.Entry("setting minCount 2 where it was derived from replicas (3)", nil, ptr.To[int32](2), int32(3), int32(2)),
		)

		// The create-time rules hold on update too: KEP-6276, "gang.minCount
		// must not exceed replicas. If the user sets minCount and it exceeds
		// the current replica count, the request is rejected" and "RollingUpdate
		// with gang is rejected". An update that breaks either is rejected, and
		// nothing of it is stored. Both ways of making minCount exceed replicas
		// are updates the KEP rejects: raising (or setting) minCount is the
		// sentence above, and lowering spec.replicas under an explicit minCount
		// is its Scaling and HPA section, "An explicit minCount acts as a floor
		// for replicas. Since validation rejects replicas < minCount, HPA or
		// manual scaling cannot reduce replicas below that value." The KEP names
		// neither field as the culprit, so either may be (minCountPaths).
		ginkgo.DescribeTable("rejects an update of a gang Deployment that breaks a create-time rule, and stores nothing", framework.ID("D-U4"),
			func(ctx context.Context, created *framework.DeploymentScheduling, mutate func(d *appsv1.Deployment, cfg **framework.DeploymentScheduling), types []field.ErrorType, paths []string) {
				d := create(ctx, recreate(f, "gang", 3, "100m").Obj(), created)
				before, err := framework.Intent.DeploymentScheduling(ctx, f.Namespace, d.Name)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())

				_, err = framework.Intent.UpdateDeployment(ctx, f.Namespace, d.Name, mutate)
				expectRejected(err, types, paths...)

				after, err := framework.Intent.DeploymentScheduling(ctx, f.Namespace, d.Name)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				gomega.Expect(after).To(gomega.Equal(before), "the rejected update changed the stored intent")
				stored, err := f.ClientSet.AppsV1().Deployments(f.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				gomega.Expect(stored.Spec.Strategy.Type).To(gomega.Equal(appsv1.RecreateDeploymentStrategyType), "the rejected update changed the strategy")
				gomega.Expect(stored.Spec.Replicas).To(gomega.HaveValue(gomega.Equal(int32(3))), "the rejected update changed spec.replicas")
			},
			ginkgo.Entry("raising an explicit minCount above replicas", gang(ptr.To[int32](2)),
				setMinCount(ptr.To[int32](4)), rejected, minCountPaths),
			ginkgo.Entry("setting minCount above replicas where it was derived", gang(nil),
				setMinCount(ptr.To[int32](4)), rejected, minCountPaths),
			ginkgo.Entry("lowering spec.replicas below an explicit minCount", gang(ptr.To[int32](2)),
				func(d *appsv1.Deployment, _ **framework.DeploymentScheduling) { d.Spec.Replicas = ptr.To[int32](1) },
				rejected, minCountPaths),
			ginkgo.Entry("switching the strategy to RollingUpdate", gang(nil),
				func(d *appsv1.Deployment, _ **framework.DeploymentScheduling) { toRollingUpdate(d) },
				notRecreate, []string{"spec.scheduling", "spec.strategy"}),
			ginkgo.Entry("switching the strategy to RollingUpdate, with an explicit minCount", gang(ptr.To[int32](2)),
				func(d *appsv1.Deployment, _ **framework.DeploymentScheduling) { toRollingUpdate(d) },
				notRecreate, []string{"spec.scheduling", "spec.strategy"}),
		)

		ginkgo.It("accepts switching a basic Deployment to RollingUpdate (only gang requires Recreate)", framework.ID("D-U4"), func(ctx context.Context) {
			d := create(ctx, recreate(f, "basic", 2, "100m").Obj(), basic())
			_, err := framework.Intent.UpdateDeployment(ctx, f.Namespace, d.Name, func(d *appsv1.Deployment, _ **framework.DeploymentScheduling) { toRollingUpdate(d) })
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "RollingUpdate with the basic policy is allowed")
		})

		ginkgo.DescribeTable("rejects structurally invalid resourceClaims at creation and names the field", framework.ID("D-U4"),
			func(ctx context.Context, claims []schedulingv1alpha3.WorkloadPodGroupResourceClaim, types []field.ErrorType, path string) {
				_, err := framework.Intent.CreateDeployment(ctx, recreate(f, "claims", 2, "100m").Obj(), withClaims(gang(nil), claims...))
				expectRejected(err, types, path)
			},
			ginkgo.Entry("both a template and a named claim", []schedulingv1alpha3.WorkloadPodGroupResourceClaim{
				{Name: "gpu", ResourceClaimName: ptr.To("shared-gpu"), ResourceClaimTemplateName: ptr.To("gpu")},
			}, structural, "spec.scheduling.resourceClaims[0]"),
			ginkgo.Entry("neither a template nor a named claim", []schedulingv1alpha3.WorkloadPodGroupResourceClaim{
				{Name: "gpu"},
			}, structural, "spec.scheduling.resourceClaims[0]"),
			ginkgo.Entry("more than 4 claims", []schedulingv1alpha3.WorkloadPodGroupResourceClaim{
				templateClaim("a", "t"), templateClaim("b", "t"), templateClaim("c", "t"), templateClaim("d", "t"), templateClaim("e", "t"),
			}, tooMany, "spec.scheduling.resourceClaims"),
			ginkgo.Entry("duplicate claim names", []schedulingv1alpha3.WorkloadPodGroupResourceClaim{
				templateClaim("gpu", "t"), templateClaim("gpu", "u"),
			}, duplicate, "spec.scheduling.resourceClaims[1]"),
		)
	})

// setMinCount sets gang.minCount of the stored intent.
func setMinCount(n *int32) func(*appsv1.Deployment, **framework.DeploymentScheduling) {
	return func(_ *appsv1.Deployment, cfg **framework.DeploymentScheduling) {
		(*cfg).SchedulingPolicy.Gang.MinCount = n
	}
}

// toRollingUpdate switches d to the RollingUpdate strategy with the
// defaults' parameters.
func toRollingUpdate(d *appsv1.Deployment) {
	quarter := intstr.FromString("25%")
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &quarter, MaxSurge: &quarter}}
}

// setTo replaces the whole intent with cfg (nil removes it).
func setTo(cfg *framework.DeploymentScheduling) intentChange {
	return func(*framework.DeploymentScheduling) *framework.DeploymentScheduling { return cfg }
}

// basic is spec.scheduling with the basic policy set explicitly.
func basic() *framework.DeploymentScheduling {
	return &framework.DeploymentScheduling{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Basic: &schedulingv1alpha3.WorkloadPodGroupBasicSchedulingPolicy{},
	}}
}

// withDisruption sets disruptionMode all (or single).
func withDisruption(cfg *framework.DeploymentScheduling, all bool) *framework.DeploymentScheduling {
	cfg.DisruptionMode = &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{Single: &schedulingv1alpha3.WorkloadPodGroupSingleDisruptionMode{}}
	if all {
		cfg.DisruptionMode = &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{All: &schedulingv1alpha3.WorkloadPodGroupAllDisruptionMode{}}
	}
	return cfg
}

// withClaims replaces the resource claims.
func withClaims(cfg *framework.DeploymentScheduling, claims ...schedulingv1alpha3.WorkloadPodGroupResourceClaim) *framework.DeploymentScheduling {
	cfg.ResourceClaims = claims
	return cfg
}

func templateClaim(name, template string) schedulingv1alpha3.WorkloadPodGroupResourceClaim {
	return schedulingv1alpha3.WorkloadPodGroupResourceClaim{Name: name, ResourceClaimTemplateName: ptr.To(template)}
}

func namedClaim(name, claim string) schedulingv1alpha3.WorkloadPodGroupResourceClaim {
	return schedulingv1alpha3.WorkloadPodGroupResourceClaim{Name: name, ResourceClaimName: ptr.To(claim)}
}
