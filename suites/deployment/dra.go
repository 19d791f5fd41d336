package deployment

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/builder"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// The claim entry every spec here uses, in spec.scheduling.resourceClaims and
// (matching by name and source) in the pod template.
const draEntry = "gpu"

var _ = ginkgo.Describe("Deployments with PodGroup-level ResourceClaims", framework.KEP(6276),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment, framework.DRAWorkloadResourceClaims), func() {
		f := framework.New("deploy-dra")
		ginkgo.BeforeEach(func(ctx context.Context) { framework.RequireDevices(ctx, f.ClientSet) })

		ginkgo.It("generates one claim per PodGroup from a template and deletes it with the PodGroup at zero replicas", framework.ID("D-E5"), func(ctx context.Context) {
			framework.CreateResourceClaimTemplate(ctx, f, "gpu", 1)
			d := create(ctx, draTemplateDeployment(f, "tmpl", 3).Recreate().Obj(), draGang(draTemplateClaim("gpu")))
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 3)
			pg, claim := draExpectSharedClaim(ctx, f, d, 3)
			gomega.Expect(pg.Spec.ResourceClaims).To(gomega.Equal([]schedulingv1beta1.PodGroupResourceClaim{
				{Name: draEntry, ResourceClaimTemplateName: ptr.To("gpu")}}), "the PodGroup carries spec.scheduling.resourceClaims")

			ginkgo.By("scaling to zero: KEP-6276 deletes the PodGroup, and the claim generated for it goes with it")
			gomega.Expect(scale(ctx, f, d, 0)).To(gomega.Succeed())
			framework.WaitForClaimGone(ctx, f.ClientSet, f.Namespace, claim.Name, claim.UID)
			gomega.Expect(draLivePodGroups(ctx, f)).To(gomega.BeEmpty(), "no PodGroup at zero replicas")

			ginkgo.By("scaling back: the new PodGroup gets a claim of its own")
			gomega.Expect(scale(ctx, f, d, 3)).To(gomega.Succeed())
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 3)
			pg2, claim2 := draExpectSharedClaim(ctx, f, d, 3)
			gomega.Expect(pg2.UID).NotTo(gomega.Equal(pg.UID), "scaling back from zero recreates the PodGroup")
			gomega.Expect(claim2.UID).NotTo(gomega.Equal(claim.UID), "the recreated PodGroup has a newly generated claim")
		})

		// KEP-6276 says named claims pin all revisions to the node of their
		// device. In 1.37 that holds while some PodGroup holds the claim: the
		// ResourceClaim controller deallocates a claim once its last
		// reservation goes, and the next allocation may pick another node
		// (measured: scale to zero and back moved the pods from
		// kwok-zone-b-rack-1-1 to kwok-zone-a-rack-0-0). So the pin is shown
		// across scale-up and a RollingUpdate rollout, whose old and new
		// PodGroups overlap (a basic policy: gang needs Recreate), and scaling
		// to zero is asserted to keep the object but release the device.
		ginkgo.It("keeps a named claim pinned to its allocated node across scale-up and a rollout", framework.ID("D-E5"), func(ctx context.Context) {
			named := framework.ResourceClaim("gpu-named", f.Namespace)
			_, err := f.ClientSet.ResourceV1().ResourceClaims(f.Namespace).Create(ctx, named, metav1.CreateOptions{})
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating ResourceClaim %s", named.Name)
			cfg := &framework.DeploymentScheduling{
				SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{Basic: &schedulingv1alpha3.WorkloadPodGroupBasicSchedulingPolicy{}},
				ResourceClaims:   []schedulingv1alpha3.WorkloadPodGroupResourceClaim{{Name: draEntry, ResourceClaimName: ptr.To(named.Name)}},
			}
			d := create(ctx, builder.Deployment("named", f.Namespace).Replicas(2).RollingUpdate(intstr.FromInt32(1), intstr.FromInt32(0)).
				Request(corev1.ResourceCPU, "100m").PodTemplate(func(p *builder.PodWrapper) { p.ResourceClaim(draEntry, named.Name, "") }).Obj(), cfg)
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 2)
			_, claim := draExpectSharedClaim(ctx, f, d, 2)
			node := framework.ClaimNode(claim)
			gomega.Expect(node).NotTo(gomega.BeEmpty(), "the named claim is allocated on one node: %s", framework.StateOf(claim))

			ginkgo.By("scaling up: new pods join the claim on " + node)
			gomega.Expect(scale(ctx, f, d, 4)).To(gomega.Succeed())
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 4)
			draExpectSharedClaim(ctx, f, d, 4)

			ginkgo.By("rolling out a new revision: its PodGroup shares the claim, so its pods land on " + node)
			_, err = framework.Intent.UpdateDeployment(ctx, f.Namespace, d.Name, func(d *appsv1.Deployment, _ **framework.DeploymentScheduling) {
				builder.SetRevision(&d.Spec.Template, "2")
			})
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "changing the pod template")
			draWaitForRollout(ctx, f, d, 4, nil)
			_, after := draExpectSharedClaim(ctx, f, d, 4)
			gomega.Expect(after.UID).To(gomega.Equal(claim.UID), "the named claim is the same object")
			gomega.Expect(after.Status.Allocation.Devices).To(gomega.Equal(claim.Status.Allocation.Devices), "the claim kept its device through the rollout")

			ginkgo.By("scaling to zero: the claim object stays (it is the user's) but, with no PodGroup left, 1.37 deallocates it")
			gomega.Expect(scale(ctx, f, d, 0)).To(gomega.Succeed())
			gomega.Eventually(ctx, func(ctx context.Context) (string, error) {
				c, err := f.ClientSet.ResourceV1().ResourceClaims(f.Namespace).Get(ctx, named.Name, metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				gomega.Expect(c.UID).To(gomega.Equal(claim.UID), "the named claim must not be deleted or recreated")
				return framework.StateOf(c).String(), nil
			}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal(framework.ClaimState{Name: named.Name, ReservedFor: []string{}}.String()),
				"waiting for the named claim to lose its reservation and allocation once no PodGroup holds it")
		})

		// KEP-6276: "Named ResourceClaims pin all revisions to the same node
		// (the node where the device is allocated)." The gang case rolls out
		// with Recreate (gang needs it), which has a gap the RollingUpdate
		// above has not: the old revision's PodGroup is deleted at zero
		// replicas before the new revision's exists, so for a while nothing
		// holds the claim, and 1.37's ResourceClaim controller may deallocate
		// it (see above). The pin then means: the claim object lives through
		// the gap, the new revision's PodGroup holds it, and every new pod
		// lands on the node of its allocation. Whether the allocation itself
		// survived the gap is left open and recorded as the reading.
		ginkgo.It("keeps a gang's new revision on the named claim's allocated node across a Recreate rollout", framework.ID("D-E5"), func(ctx context.Context) {
			named := framework.ResourceClaim("gpu-named", f.Namespace)
			_, err := f.ClientSet.ResourceV1().ResourceClaims(f.Namespace).Create(ctx, named, metav1.CreateOptions{})
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating ResourceClaim %s", named.Name)
			cfg := draGang(schedulingv1alpha3.WorkloadPodGroupResourceClaim{Name: draEntry, ResourceClaimName: ptr.To(named.Name)})
			d := create(ctx, builder.Deployment("named-recreate", f.Namespace).Replicas(2).Recreate().
				Request(corev1.ResourceCPU, "100m").PodTemplate(func(p *builder.PodWrapper) { p.ResourceClaim(draEntry, named.Name, "") }).Obj(), cfg)
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 2)
			oldPG, claim := draExpectSharedClaim(ctx, f, d, 2)
			node := framework.ClaimNode(claim)
			gomega.Expect(node).NotTo(gomega.BeEmpty(), "the named claim is allocated on one node: %s", framework.StateOf(claim))

			ginkgo.By("a Recreate rollout to a new revision: the claim must outlive the old PodGroup, and the new pods follow it")
			_, err = framework.Intent.UpdateDeployment(ctx, f.Namespace, d.Name, func(d *appsv1.Deployment, _ **framework.DeploymentScheduling) {
				builder.SetRevision(&d.Spec.Template, "2")
			})
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "changing the pod template")
			draWaitForRollout(ctx, f, d, 2, claim)
			// draExpectSharedClaim checks that each pod of the new revision
			// resolves the entry to the claim and runs on its node.
			newPG, after := draExpectSharedClaim(ctx, f, d, 2)
			gomega.Expect(newPG.UID).NotTo(gomega.Equal(oldPG.UID), "the new revision has a PodGroup of its own")
			gomega.Expect(after.UID).To(gomega.Equal(claim.UID), "the named claim is the same object")
			now := framework.ClaimNode(after)
			gomega.Expect(now).NotTo(gomega.BeEmpty(), "the named claim is allocated on one node: %s", framework.StateOf(after))
			reading := readingClaimKept
			if now != node || !equality.Semantic.DeepEqual(after.Status.Allocation.Devices, claim.Status.Allocation.Devices) {
				reading = readingClaimReallocated
			}
			ginkgo.GinkgoWriter.Printf("reading taken: %s (allocated on %s before the rollout, on %s after)\n", reading, node, now)
			framework.RecordReading(reading)
		})

		ginkgo.It("deletes the old PodGroup and its generated claim when a Recreate rollout takes the old ReplicaSet to zero", framework.ID("D-I6"), func(ctx context.Context) {
			framework.CreateResourceClaimTemplate(ctx, f, "gpu", 1)
			d := create(ctx, draTemplateDeployment(f, "rollout", 2).Recreate().Obj(), draGang(draTemplateClaim("gpu")))
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 2)
			oldPG, oldClaim := draExpectSharedClaim(ctx, f, d, 2)

			ginkgo.By("rolling out a new revision")
			_, err := framework.Intent.UpdateDeployment(ctx, f.Namespace, d.Name, func(d *appsv1.Deployment, _ **framework.DeploymentScheduling) {
				builder.SetRevision(&d.Spec.Template, "2")
			})
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "changing the pod template")
			draWaitForRollout(ctx, f, d, 2, nil)
			framework.WaitForClaimGone(ctx, f.ClientSet, f.Namespace, oldClaim.Name, oldClaim.UID)
			gomega.Eventually(ctx, func(ctx context.Context) []string {
				return draPodGroupUIDs(ctx, f)
			}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).ShouldNot(gomega.ContainElement(string(oldPG.UID)),
				"waiting for the old revision's PodGroup %s to be deleted", oldPG.Name)

			newPG, newClaim := draExpectSharedClaim(ctx, f, d, 2)
			gomega.Expect(newPG.UID).NotTo(gomega.Equal(oldPG.UID), "the new revision has its own PodGroup")
			gomega.Expect(newClaim.UID).NotTo(gomega.Equal(oldClaim.UID), "the new PodGroup has its own claim")
			// The old ReplicaSet is kept for history at zero replicas; it
			// does not keep its PodGroup or claim.
			var old []string
			for _, rs := range replicaSets(ctx, f, d) {
				if !metav1.IsControlledBy(&newPG, &rs) && ptr.Deref(rs.Spec.Replicas, -1) == 0 {
					old = append(old, rs.Name)
				}
			}
			gomega.Expect(old).To(gomega.HaveLen(1), "the old ReplicaSet stays in the revision history at zero replicas")
		})

		// KEP-6276: with the gate off, spec.scheduling.resourceClaims is
		// stored but stripped from the PodGroup, and pods fall back to
		// per-pod claims. Measured in 1.37 with the gate off on
		// kube-apiserver as well: the apiserver drops resourceClaims from a
		// new Workload's template and PodGroup itself. The webhook does not
		// consult the gate (rejection is deferred to Beta), so it stays on.
		ginkgo.It("stores resourceClaims but gives pods per-pod claims when DRAWorkloadResourceClaims is off", framework.ID("D-P6"),
			framework.Serial, framework.Disruptive, func(ctx context.Context) {
				// The apiserver goes first. A kube-controller-manager that is
				// still starting when the apiserver restarts exits; the restart
				// of the apiserver starts it again (localcluster heals).
				framework.Reconfigure(ctx, framework.ReconfigureInput{
					Changes: framework.GateOn(framework.DRAWorkloadResourceClaims, false,
						localcluster.APIServer, localcluster.ControllerManager, localcluster.Scheduler, framework.ReferenceControllerManager),
				})
				framework.CreateResourceClaimTemplate(ctx, f, "gpu", 1)
				cfg := draGang(draTemplateClaim("gpu"))
				d := create(ctx, draTemplateDeployment(f, "gate-off", 3).Recreate().Obj(), cfg)
				stored, err := framework.Intent.DeploymentScheduling(ctx, f.Namespace, d.Name)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				gomega.Expect(stored).To(gomega.Equal(cfg), "spec.scheduling (with resourceClaims) is stored unchanged")

				pods := framework.WaitForPodsRunning(ctx, podsOf(f, d), 3)
				w := theWorkload(ctx, f, d)
				gomega.Expect(w.Spec.PodGroupTemplates[0].ResourceClaims).To(gomega.BeEmpty(), "the Workload template has no resourceClaims with the gate off")
				pgs := draLivePodGroups(ctx, f)
				gomega.Expect(pgs).To(gomega.HaveLen(1), "one PodGroup")
				gomega.Expect(pgs[0].Spec.ResourceClaims).To(gomega.BeEmpty(), "the PodGroup has no resourceClaims with the gate off")

				ginkgo.By("each pod has a claim of its own, generated for and reserved for the pod")
				list, err := framework.ListPods(ctx, podsOf(f, d))
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				claims, err := framework.ListClaims(ctx, f.ClientSet, f.Namespace)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				gomega.Expect(claims).To(gomega.HaveLen(3), "one claim per pod, none per PodGroup: %v", draClaimStates(claims))
				gomega.Expect(framework.ClaimsControlledBy(claims, pgs[0].UID)).To(gomega.BeEmpty(), "no claim belongs to the PodGroup")
				byName := map[string]resourcev1.ResourceClaim{}
				for _, c := range claims {
					byName[c.Name] = c
				}
				for _, p := range list {
					c, ok := byName[framework.PodClaimName(&p, draEntry)]
					gomega.Expect(ok).To(gomega.BeTrue(), "pod %s resolved %q to no claim of the namespace: %v", p.Name, draEntry, p.Status.ResourceClaimStatuses)
					gomega.Expect(metav1.IsControlledBy(&c, &p)).To(gomega.BeTrue(), "claim %s is owned by pod %s: %v", c.Name, p.Name, c.OwnerReferences)
					gomega.Expect(framework.ReservedOnlyFor(&c, framework.PodConsumer(&p))).To(gomega.BeTrue(), "%s is reserved for pod %s alone", framework.StateOf(&c), p.Name)
					gomega.Expect(p.Spec.NodeName).To(gomega.Equal(framework.ClaimNode(&c)), "pod %s runs where its own device is", p.Name)
				}
				ginkgo.GinkgoWriter.Printf("gate off: %s; claims %v\n", pods, draClaimStates(claims))
			})
	})

// The readings of D-E5's Recreate case (see above), as recorded in the report.
const (
	readingClaimKept        = "the named claim kept its allocation through the Recreate gap"
	readingClaimReallocated = "the named claim was released in the Recreate gap and allocated again; the new revision followed it"
)

// draGang is a gang intent (minCount from replicas) with claims.
func draGang(claims ...schedulingv1alpha3.WorkloadPodGroupResourceClaim) *framework.DeploymentScheduling {
	cfg := gang(nil)
	cfg.ResourceClaims = claims
	return cfg
}

// draTemplateClaim is the claim entry draEntry generated from template.
func draTemplateClaim(template string) schedulingv1alpha3.WorkloadPodGroupResourceClaim {
	return schedulingv1alpha3.WorkloadPodGroupResourceClaim{Name: draEntry, ResourceClaimTemplateName: ptr.To(template)}
}

// draTemplateDeployment is a Deployment of small pods whose template opts
// into the PodGroup's claim generated from template "gpu" (same name and
// source). Small pods, because every pod sharing the claim lands on the one
// node of its device.
func draTemplateDeployment(f *framework.Framework, name string, replicas int32) *builder.DeploymentWrapper {
	return builder.Deployment(name, f.Namespace).Replicas(replicas).Request(corev1.ResourceCPU, "100m").
		PodTemplate(func(p *builder.PodWrapper) { p.ResourceClaim(draEntry, "", "gpu") })
}

// draLivePodGroups lists the namespace's PodGroups that are not being deleted.
func draLivePodGroups(ctx context.Context, f *framework.Framework) []schedulingv1beta1.PodGroup {
	var out []schedulingv1beta1.PodGroup
	for _, pg := range podGroups(ctx, f) {
		if pg.DeletionTimestamp == nil {
			out = append(out, pg)
		}
	}
	return out
}

func draPodGroupUIDs(ctx context.Context, f *framework.Framework) []string {
	var out []string
	for _, pg := range podGroups(ctx, f) {
		out = append(out, string(pg.UID))
	}
	return out
}

func draClaimStates(claims []resourcev1.ResourceClaim) []string {
	out := make([]string, 0, len(claims))
	for i := range claims {
		out = append(out, framework.StateOf(&claims[i]).String())
	}
	return out
}

// draExpectSharedClaim asserts the PodGroup-level claim of d's one live
// PodGroup: allocated and reserved for exactly the PodGroup, shared by all
// want pods (each resolves draEntry to it and runs on its device's node), and
// — for a template-generated claim — owned by the PodGroup and the only
// generated claim of the namespace (one per PodGroup, none per pod).
func draExpectSharedClaim(ctx context.Context, f *framework.Framework, d *appsv1.Deployment, want int) (schedulingv1beta1.PodGroup, *resourcev1.ResourceClaim) {
	ginkgo.GinkgoHelper()
	var pg schedulingv1beta1.PodGroup
	gomega.Eventually(ctx, func(ctx context.Context) []schedulingv1beta1.PodGroup {
		pgs := draLivePodGroups(ctx, f)
		if len(pgs) == 1 {
			pg = pgs[0]
		}
		return pgs
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.HaveLen(1), "waiting for one live PodGroup of %s", d.Name)
	claim := framework.WaitForPodGroupClaim(ctx, framework.PodGroupClaimInput{ClientSet: f.ClientSet, Namespace: f.Namespace, PodGroup: pg.Name, Entry: draEntry})
	pods, err := framework.ListPods(ctx, podsOf(f, d))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(pods).To(gomega.HaveLen(want))
	framework.ExpectPodsShareClaim(pods, draEntry, claim)

	claims, err := framework.ListClaims(ctx, f.ClientSet, f.Namespace)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	var generated []string
	for _, c := range claims {
		if metav1.GetControllerOf(&c) != nil {
			generated = append(generated, framework.StateOf(&c).String())
		}
	}
	if len(pg.Spec.ResourceClaims) == 1 && pg.Spec.ResourceClaims[0].ResourceClaimTemplateName != nil {
		gomega.Expect(metav1.GetControllerOf(claim)).To(gomega.HaveField("UID", types.UID(pg.UID)), "the generated claim is owned by the PodGroup")
		gomega.Expect(generated).To(gomega.HaveLen(1), "one generated claim in the namespace (the PodGroup's), none per pod")
	} else {
		gomega.Expect(generated).To(gomega.BeEmpty(), "a named claim generates no claims")
	}
	ginkgo.GinkgoWriter.Printf("PodGroup %s: %s shared by %d pods\n", pg.Name, framework.StateOf(claim), len(pods))
	return pg, claim
}

// draWaitForRollout waits until d's rollout is complete: the controller saw
// the latest generation, want replicas all updated and available, and want
// pods Running with no old pod left. With named set, it stops at once when
// that claim is deleted or replaced meanwhile: the pods could then never
// follow it.
func draWaitForRollout(ctx context.Context, f *framework.Framework, d *appsv1.Deployment, want int32, named *resourcev1.ResourceClaim) {
	ginkgo.GinkgoHelper()
	type rollout struct {
		Done   bool
		Detail string
	}
	gomega.Eventually(ctx, func(ctx context.Context) (rollout, error) {
		if named != nil {
			if gone := draClaimGone(ctx, f, named); gone != "" {
				return rollout{}, gomega.StopTrying(gone)
			}
		}
		cur, err := f.ClientSet.AppsV1().Deployments(f.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		if err != nil {
			return rollout{}, err
		}
		pods, err := framework.ListPods(ctx, podsOf(f, d))
		if err != nil {
			return rollout{}, err
		}
		st := cur.Status
		running := int32(0)
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		return rollout{
			Done: st.ObservedGeneration >= cur.Generation && st.Replicas == want && st.UpdatedReplicas == want &&
				st.AvailableReplicas == want && int32(len(pods)) == want && running == want,
			Detail: fmt.Sprintf("generation %d/%d, replicas %d, updated %d, available %d, pods %d (running %d)",
				st.ObservedGeneration, cur.Generation, st.Replicas, st.UpdatedReplicas, st.AvailableReplicas, len(pods), running),
		}, nil
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.HaveField("Done", true),
		"waiting for the rollout of %s to replace all %d pods", d.Name, want)
}

// draClaimGone says how the named claim c went away (deleted, being
// deleted, or replaced by another object of its name), or "" if it is there.
func draClaimGone(ctx context.Context, f *framework.Framework, c *resourcev1.ResourceClaim) string {
	cur, err := f.ClientSet.ResourceV1().ResourceClaims(c.Namespace).Get(ctx, c.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Sprintf("the named claim %s was deleted during the rollout; it is the user's and pins every revision", c.Name)
	case err != nil:
		return "" // a transient read error: the next poll tells
	case cur.UID != c.UID:
		return fmt.Sprintf("the named claim %s was replaced during the rollout (UID %s, was %s)", c.Name, cur.UID, c.UID)
	case cur.DeletionTimestamp != nil:
		return fmt.Sprintf("the named claim %s is being deleted during the rollout: %s", c.Name, framework.StateOf(cur))
	}
	return ""
}
