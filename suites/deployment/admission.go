package deployment

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// minCountPaths are the fields a rejection of minCount > replicas may name:
// the rule compares the two, and the KEP names neither as the culprit.
var minCountPaths = []string{"spec.scheduling.schedulingPolicy.gang.minCount", "spec.replicas"}

var _ = ginkgo.Describe("Deployment spec.scheduling admission", framework.KEP(6276),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment), func() {
		f := framework.New("deploy-admission")

		ginkgo.It("rejects spec.scheduling when the pod template already sets schedulingGroup", framework.ID("D-V1"), func(ctx context.Context) {
			d := recreate(f, "byo", 2, "100m").SchedulingGroup("my-own-group").Obj()
			_, err := framework.Intent.CreateDeployment(ctx, d, gang(nil))
			// KEP-6276: "If the pod template already sets spec.schedulingGroup,
			// setting spec.scheduling is rejected at admission." Either field may be named.
			expectRejected(err, rejected, "spec.scheduling", "spec.template.spec.schedulingGroup")

			ginkgo.By("the same Deployment without spec.scheduling is accepted")
			create(ctx, d, nil)
		})

		ginkgo.It("rejects RollingUpdate with gang and minCount above replicas", framework.ID("D-E2"), func(ctx context.Context) {
			rolling := builder.Deployment("rolling", f.Namespace).Replicas(2).Obj() // the default strategy is RollingUpdate
			_, err := framework.Intent.CreateDeployment(ctx, rolling, gang(nil))
			// KEP-6276: "RollingUpdate with gang is rejected. Gang scheduling
			// requires Recreate strategy for Alpha." It names no field: the
			// rejection may name the intent or the strategy.
			expectRejected(err, notRecreate, "spec.scheduling", "spec.strategy")

			tooHigh := recreate(f, "too-high", 2, "100m").Obj()
			_, err = framework.Intent.CreateDeployment(ctx, tooHigh, gang(ptr.To[int32](3)))
			// KEP-6276: "gang.minCount must not exceed replicas. If the user sets
			// minCount and it exceeds the current replica count, the request is
			// rejected." Either side of the comparison may be named.
			expectRejected(err, rejected, minCountPaths...)

			ginkgo.By("basic scheduling with RollingUpdate stays allowed")
			create(ctx, builder.Deployment("rolling-basic", f.Namespace).Replicas(2).Obj(), &framework.DeploymentScheduling{})
		})

		ginkgo.It("rejects every spec.scheduling change after creation except gang.minCount within replicas", framework.ID("D-V2"), func(ctx context.Context) {
			d := create(ctx, recreate(f, "frozen", 3, "100m").Obj(), gang(ptr.To[int32](2)))
			update := func(mutate func(cfg *framework.DeploymentScheduling) *framework.DeploymentScheduling) error {
				_, err := framework.Intent.UpdateDeployment(ctx, f.Namespace, d.Name, func(_ *appsv1.Deployment, cfg **framework.DeploymentScheduling) {
					*cfg = mutate(*cfg)
				})
				return err
			}
			ginkgo.By("adding a topology constraint")
			expectRejected(update(func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
				return withTopology(c, "topology.kubernetes.io/zone")
			}), rejected, "spec.scheduling.schedulingConstraints")
			ginkgo.By("changing the disruption mode")
			expectRejected(update(func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
				c.DisruptionMode = &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{All: &schedulingv1alpha3.WorkloadPodGroupAllDisruptionMode{}}
				return c
			}), rejected, "spec.scheduling.disruptionMode")
			ginkgo.By("switching gang to basic")
			expectRejected(update(func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
				c.SchedulingPolicy = &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{Basic: &schedulingv1alpha3.WorkloadPodGroupBasicSchedulingPolicy{}}
				return c
			}), rejected, "spec.scheduling.schedulingPolicy")
			ginkgo.By("adding a resource claim")
			expectRejected(update(func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
				c.ResourceClaims = []schedulingv1alpha3.WorkloadPodGroupResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu")}}
				return c
			}), rejected, "spec.scheduling.resourceClaims")
			ginkgo.By("removing spec.scheduling")
			expectRejected(update(func(*framework.DeploymentScheduling) *framework.DeploymentScheduling { return nil }), rejected, "spec.scheduling")
			ginkgo.By("raising minCount above replicas")
			expectRejected(update(func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
				c.SchedulingPolicy.Gang.MinCount = ptr.To[int32](4)
				return c
			}), rejected, minCountPaths...)

			ginkgo.By("changing minCount within replicas is accepted")
			gomega.Expect(update(func(c *framework.DeploymentScheduling) *framework.DeploymentScheduling {
				c.SchedulingPolicy.Gang.MinCount = ptr.To[int32](3)
				return c
			})).To(gomega.Succeed())
			stored, err := framework.Intent.DeploymentScheduling(ctx, f.Namespace, d.Name)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(stored.ExplicitMinCount()).To(gomega.HaveValue(gomega.Equal(int32(3))))
			gomega.Expect(stored.SchedulingConstraints).To(gomega.BeNil(), "a rejected change was stored")
		})

		// KEP-6276, Scaling and HPA: "An explicit minCount acts as a floor
		// for replicas. Since validation rejects replicas < minCount, HPA or
		// manual scaling cannot reduce replicas below that value." So every
		// path to spec.replicas is tried: an update, a Scale written back
		// whole, the HPA's GET-then-UPDATE as its own identity, and kubectl
		// scale's merge patch.
		ginkgo.It("rejects scaling, through spec.replicas, /scale, the HPA's update and kubectl's patch, below an explicit gang.minCount", framework.ID("D-V3"), func(ctx context.Context) {
			d := create(ctx, recreate(f, "floor", 3, "100m").Obj(), gang(ptr.To[int32](3)))
			a := apps.Deployment(d)
			// KEP-6276: "validation rejects replicas < minCount".
			expectRejected(scale(ctx, f, d, 2), rejected, minCountPaths...)

			s, err := f.ClientSet.AppsV1().Deployments(f.Namespace).GetScale(ctx, d.Name, metav1.GetOptions{})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			s.Spec.Replicas = 1
			s.ResourceVersion = "" // unconditional: the Deployment controller updates status meanwhile
			_, err = f.ClientSet.AppsV1().Deployments(f.Namespace).UpdateScale(ctx, d.Name, s, metav1.UpdateOptions{})
			expectRejected(err, rejected, minCountPaths...)

			ginkgo.By("the HPA's scale update below the floor is rejected")
			as, err := apps.TryScaleAsHPA(ctx, f, a, 2)
			ginkgo.GinkgoWriter.Printf("HPA-style scale to 2 as %s: %v\n", as, err)
			expectRejected(err, rejected, minCountPaths...)
			ginkgo.By("kubectl scale's patch of /scale below the floor is rejected")
			expectRejected(apps.TryScalePatch(ctx, f, a, 1), rejected, minCountPaths...)

			ginkgo.By("scaling up, and through /scale at or above the floor, is accepted")
			gomega.Expect(scale(ctx, f, d, 4)).To(gomega.Succeed())
			s, err = f.ClientSet.AppsV1().Deployments(f.Namespace).GetScale(ctx, d.Name, metav1.GetOptions{})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			_, err = f.ClientSet.AppsV1().Deployments(f.Namespace).UpdateScale(ctx, d.Name, &autoscalingv1.Scale{
				ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace}, Spec: autoscalingv1.ScaleSpec{Replicas: 3},
			}, metav1.UpdateOptions{})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			got, err := f.ClientSet.AppsV1().Deployments(f.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(got.Spec.Replicas).To(gomega.HaveValue(gomega.Equal(int32(3))))

			ginkgo.By("the HPA scales up: accepted, and the Workload and PodGroup keep the user's minCount")
			as, err = apps.TryScaleAsHPA(ctx, f, a, 5)
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "the HPA's scale to 5 (as %s), above the floor", as)
			// KEP-6276: the Workload's "gang minCount reflects the resolved
			// value (user-set or derived from replicas)".
			apps.WaitForGang(ctx, f, a, 3, 5)
		})

		// KEP-6276, Scaling and HPA: "Users who need HPA-driven scaling could
		// leave minCount unset (gang: {}) so it auto-tracks replicas." and
		// "Scaling through the /scale subresource updates the Deployment's
		// desired replica count. For a positive replica count, the
		// Deployment controller first reconciles the Workload's
		// PodGroupTemplate so its gang minCount reflects the resolved value
		// (user-set or derived from replicas)." The ReplicaSet's PodGroup
		// "inherits its runtime gang minCount from the Workload's
		// PodGroupTemplate". So a derived minCount is no floor: the HPA may
		// scale down, and both minCounts follow replicas either way.
		ginkgo.It("lets the HPA and kubectl scale a gang with a derived minCount down and up through /scale, both minCounts following replicas", framework.ID("D-V3"), func(ctx context.Context) {
			d := create(ctx, recreate(f, "derived", 3, "100m").Obj(), gang(nil))
			a := apps.Deployment(d)
			waitForGangState(ctx, f, d, 3, true)

			ginkgo.By("the HPA scales 3 -> 2: accepted, minCount 2")
			as, err := apps.TryScaleAsHPA(ctx, f, a, 2)
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "the HPA's scale to 2 (as %s): a derived minCount is no floor", as)
			ginkgo.GinkgoWriter.Printf("HPA-style scale to 2 as %s\n", as)
			waitForGangState(ctx, f, d, 2, true)

			ginkgo.By("the HPA scales 2 -> 4: accepted, minCount 4")
			as, err = apps.TryScaleAsHPA(ctx, f, a, 4)
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "the HPA's scale to 4 (as %s)", as)
			waitForGangState(ctx, f, d, 4, true)

			ginkgo.By("kubectl scale 4 -> 1: accepted, minCount 1")
			gomega.Expect(apps.TryScalePatch(ctx, f, a, 1)).To(gomega.Succeed(), "kubectl scale's patch to 1: a derived minCount is no floor")
			waitForGangState(ctx, f, d, 1, true)

			// KEP-6276: "When unset, the controller derives minCount from
			// replicas": the derived value is not the user's, or the next
			// scale down would meet it as a floor.
			stored, err := framework.Intent.DeploymentScheduling(ctx, f.Namespace, d.Name)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(stored.ExplicitMinCount()).To(gomega.BeNil(), "the derived minCount was written back to spec.scheduling")
		})
	})
