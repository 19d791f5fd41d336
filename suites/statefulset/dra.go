package statefulset

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

var _ = ginkgo.Describe("StatefulSets with PodGroup-level ResourceClaims", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet, framework.DRAWorkloadResourceClaims), func() {
		f := framework.New("sts-dra")
		ginkgo.BeforeEach(func(ctx context.Context) { framework.RequireDevices(ctx, f.ClientSet) })

		ginkgo.It("generates one claim for the PodGroup from a template, reserved for the PodGroup, shared by pods added on scale-up",
			framework.ID("S-I12", "S-I13", "S-I14", "S-E14", "S-U24"), func(ctx context.Context) {
				framework.CreateResourceClaimTemplate(ctx, f, "gpu", 1)
				cfg := draGang(draClaim("gpu", "", "gpu"))
				set := create(ctx, draSet(f, "tmpl", 2, draClaim("gpu", "", "gpu")).Obj(), cfg)
				apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 2)
				w := apps.TheWorkload(ctx, f, apps.StatefulSet(set))
				gomega.Expect(w.Spec.PodGroupTemplates[0].ResourceClaims).To(gomega.Equal(draPodGroupClaims(cfg)), "S-I12: the Workload template carries spec.scheduling.resourceClaims")
				pg := apps.ThePodGroup(ctx, f, &w)
				gomega.Expect(pg.Spec.ResourceClaims).To(gomega.Equal(draPodGroupClaims(cfg)), "S-I12: the PodGroup carries spec.scheduling.resourceClaims")
				// S-I14: allocated and reserved for exactly the PodGroup.
				claim := framework.WaitForPodGroupClaim(ctx, draClaimInput(f, &pg, "gpu"))
				draExpectOnlyClaims(ctx, f, claim) // S-I13: one claim, none per pod
				gomega.Expect(metav1.IsControlledBy(claim, &pg)).To(gomega.BeTrue(), "S-I13: the generated claim is owned by the PodGroup: %v", claim.OwnerReferences)
				draExpectPodsShare(ctx, f, set, 2, "gpu", claim) // S-I12: shared by all pods

				ginkgo.By("scaling up to 4: the new pods join the existing claim, no claim is generated")
				apps.Scale(ctx, f, apps.StatefulSet(set), 4)
				apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 4)
				after := framework.WaitForPodGroupClaim(ctx, draClaimInput(f, &pg, "gpu"))
				gomega.Expect(after.UID).To(gomega.Equal(claim.UID), "S-E14: scale-up keeps the PodGroup's claim")
				draExpectOnlyClaims(ctx, f, claim)
				draExpectPodsShare(ctx, f, set, 4, "gpu", claim)
			})

		ginkgo.It("shares a named ResourceClaim among all pods, reserved for the PodGroup only", framework.ID("S-I12", "S-I14", "S-E13"), func(ctx context.Context) {
			named := framework.ResourceClaim("shared-gpu", f.Namespace)
			_, err := f.ClientSet.ResourceV1().ResourceClaims(f.Namespace).Create(ctx, named, metav1.CreateOptions{})
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating ResourceClaim %s", named.Name)
			cfg := draGang(draClaim("gpu", named.Name, ""))
			set := create(ctx, draSet(f, "named", 3, draClaim("gpu", named.Name, "")).Obj(), cfg)
			apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 3)
			w := apps.TheWorkload(ctx, f, apps.StatefulSet(set))
			pg := apps.ThePodGroup(ctx, f, &w)
			gomega.Expect(pg.Spec.ResourceClaims).To(gomega.Equal(draPodGroupClaims(cfg)), "the PodGroup carries spec.scheduling.resourceClaims")
			claim := framework.WaitForPodGroupClaim(ctx, draClaimInput(f, &pg, "gpu"))
			gomega.Expect(claim.Name).To(gomega.Equal(named.Name), "the PodGroup's claim is the named one")
			draExpectOnlyClaims(ctx, f, claim) // nothing generated
			draExpectPodsShare(ctx, f, set, 3, "gpu", claim)
		})

		// S-U24's gate-off half. KEP-6277: the resourceClaims field "requires
		// DRAWorkloadResourceClaims (KEP-5729) in kube-apiserver, kube-
		// controller-manager, kube-scheduler, and kubelet; with that gate off
		// the API server clears the field before it is stored ... so the
		// controller never sees it"; and "When spec.scheduling.resourceClaims
		// is non-empty (and the DRAWorkloadResourceClaims feature gate is
		// enabled), the controller populates PodGroupTemplate.resourceClaims";
		// "Without it, the field is ignored and ResourceClaims are not shared
		// at the PodGroup level". Two entries: the whole cluster off (the
		// API server's side clears the field: asserted where spec.scheduling
		// is a native field; an annotation is no field the apiserver knows),
		// and the controller side alone off, where only the controller can
		// omit the claims (the apiserver, gate on, would store them).
		ginkgo.DescribeTable("omits resourceClaims from the Workload template and the PodGroup, and pods get claims of their own, with DRAWorkloadResourceClaims off",
			framework.ID("S-U24"), framework.Serial, framework.Disruptive,
			func(ctx context.Context, apiServerOff bool, components ...localcluster.Component) {
				framework.RequireReconfigure(framework.GateOn(framework.DRAWorkloadResourceClaims, false, components...)...)
				// The apiserver goes first (ComponentChanges apply in order).
				framework.Reconfigure(ctx, framework.ReconfigureInput{
					Changes: framework.GateOn(framework.DRAWorkloadResourceClaims, false, components...)})
				framework.CreateResourceClaimTemplate(ctx, f, "gpu", 1)
				cfg := draGang(draClaim("gpu", "", "gpu"))
				set := create(ctx, draSet(f, "gate-off", 2, draClaim("gpu", "", "gpu")).Obj(), cfg)
				a := apps.StatefulSet(set)
				// The objects first: a PodGroup that kept the claims would
				// hold the pods Pending (nothing generates its claim with the
				// gate off), and this says why.
				apps.WaitForState(ctx, f, a, "its Workload and PodGroup", gomega.SatisfyAll(
					gomega.HaveField("Workloads", gomega.HaveLen(1)), gomega.HaveField("PodGroups", gomega.HaveLen(1))))
				w := apps.TheWorkload(ctx, f, a)
				gomega.Expect(w.Spec.PodGroupTemplates[0].ResourceClaims).To(gomega.BeEmpty(), "the Workload template has no resourceClaims with the gate off")
				pg := apps.ThePodGroup(ctx, f, &w)
				gomega.Expect(pg.Spec.ResourceClaims).To(gomega.BeEmpty(), "the PodGroup has no resourceClaims with the gate off")
				apps.WaitForRunning(ctx, f, a, 2)

				stored := storedIntent(ctx, f, set)
				switch {
				case apiServerOff && framework.Intent.StatefulSetMode == framework.IntentNative:
					gomega.Expect(stored.ResourceClaims).To(gomega.BeEmpty(), "the API server clears spec.scheduling.resourceClaims before it is stored, with the gate off")
				default:
					logf("stored spec.scheduling.resourceClaims (%s mode, apiserver gate off: %t): %+v", framework.Intent.StatefulSetMode, apiServerOff, stored.ResourceClaims)
				}

				ginkgo.By("each pod has a claim of its own, generated for and reserved for the pod; none belongs to the PodGroup")
				pods, err := framework.ListPods(ctx, apps.Pods(f, a))
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				claims, err := framework.ListClaims(ctx, f.ClientSet, f.Namespace)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				gomega.Expect(claims).To(gomega.HaveLen(2), "one claim per pod, none per PodGroup: %v", apps.Names(claims))
				gomega.Expect(framework.ClaimsControlledBy(claims, pg.UID)).To(gomega.BeEmpty(), "no claim belongs to the PodGroup")
				byName := map[string]resourcev1.ResourceClaim{}
				for _, c := range claims {
					byName[c.Name] = c
				}
				for _, p := range pods {
					c, ok := byName[framework.PodClaimName(&p, "gpu")]
					gomega.Expect(ok).To(gomega.BeTrue(), "pod %s resolved gpu to no claim of the namespace: %v", p.Name, p.Status.ResourceClaimStatuses)
					gomega.Expect(metav1.IsControlledBy(&c, &p)).To(gomega.BeTrue(), "claim %s is owned by pod %s: %v", c.Name, p.Name, c.OwnerReferences)
					gomega.Expect(framework.ReservedOnlyFor(&c, framework.PodConsumer(&p))).To(gomega.BeTrue(), "%s is reserved for pod %s alone", framework.StateOf(&c), p.Name)
				}
			},
			ginkgo.Entry("on every component (the KEP's configuration: the API server clears the field)", true,
				localcluster.APIServer, localcluster.ControllerManager, localcluster.Scheduler, framework.ReferenceWebhook, framework.ReferenceControllerManager),
			ginkgo.Entry("on the controller side only (the controller must omit what the apiserver stores)", false,
				localcluster.ControllerManager, framework.ReferenceControllerManager),
		)

		// KEP-6277 keeps the PodGroup for the StatefulSet's whole life, so a
		// claim reserved for it outlives zero replicas (and holds its device).
		ginkgo.It("keeps the claim allocated and reserved for the retained PodGroup at zero replicas; deleting the PodGroup deletes the claim",
			framework.ID("S-E7", "S-I15"), func(ctx context.Context) {
				framework.CreateResourceClaimTemplate(ctx, f, "gpu", 1)
				set := create(ctx, draSet(f, "zero", 2, draClaim("gpu", "", "gpu")).Obj(), draGang(draClaim("gpu", "", "gpu")))
				apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 2)
				w := apps.TheWorkload(ctx, f, apps.StatefulSet(set))
				pg := apps.ThePodGroup(ctx, f, &w)
				claim := framework.WaitForPodGroupClaim(ctx, draClaimInput(f, &pg, "gpu"))
				before := framework.StateOf(claim)

				ginkgo.By("scaling to zero")
				apps.Scale(ctx, f, apps.StatefulSet(set), 0)
				apps.WaitForPodsCreated(ctx, f, apps.StatefulSet(set), 0)
				gomega.Consistently(ctx, func(ctx context.Context) (string, error) {
					c, err := f.ClientSet.ResourceV1().ResourceClaims(f.Namespace).Get(ctx, claim.Name, metav1.GetOptions{})
					if err != nil {
						return "", err
					}
					s := apps.Read(ctx, f, apps.StatefulSet(set))
					if len(s.PodGroups) != 1 || s.PodGroups[0].UID != pg.UID || s.PodGroups[0].Terminating {
						return "PodGroup not retained: " + s.String(), nil
					}
					return framework.StateOf(c).String(), nil
				}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal(before.String()),
					"S-E7: at zero replicas the PodGroup stays and its claim stays allocated on the same device's node and reserved for it")

				ginkgo.By("scaling back: the pods return to the same claim on the same node")
				apps.Scale(ctx, f, apps.StatefulSet(set), 2)
				apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 2)
				draExpectPodsShare(ctx, f, set, 2, "gpu", claim)

				ginkgo.By("deleting the StatefulSet: the PodGroup goes, and the claim generated for it with it")
				gomega.Expect(f.ClientSet.AppsV1().StatefulSets(f.Namespace).Delete(ctx, set.Name, metav1.DeleteOptions{})).To(gomega.Succeed())
				gomega.Eventually(ctx, func(ctx context.Context) []string {
					return apps.Names(apps.PodGroupsReferencing(ctx, f, w.Name))
				}).WithTimeout(f.Timeouts.Cleanup).WithPolling(f.Timeouts.Poll).Should(gomega.BeEmpty(), "waiting for PodGroup %s to be deleted", pg.Name)
				framework.WaitForClaimGone(ctx, f.ClientSet, f.Namespace, claim.Name, claim.UID)
			})

		// KEP-6277 "ResourceClaims across revisions". The PodGroup has two
		// claims: gpu (one device) and ctl (a claim without requests, which
		// pins nothing). The new revision keeps ctl and points gpu at another
		// template, so its gpu no longer matches: every new pod gets a gpu
		// claim of its own, while the PodGroup's gpu claim stays allocated
		// with no pod using it. (Keeping a matching device claim instead
		// would pin the new pods to a node whose 2 devices the PodGroup's
		// claims already hold.)
		ginkgo.It("gives pods a pod-scoped claim for a changed claim reference on a rolling update; matching claims stay shared, the unused shared claim stays allocated",
			framework.ID("S-E8"), func(ctx context.Context) {
				framework.CreateResourceClaimTemplate(ctx, f, "gpu", 1)
				framework.CreateResourceClaimTemplate(ctx, f, "gpu-own", 1)
				framework.CreateResourceClaimTemplate(ctx, f, "none", 0)
				cfg := draGang(draClaim("gpu", "", "gpu"), draClaim("ctl", "", "none"))
				set := create(ctx, draSet(f, "roll", 2, draClaim("gpu", "", "gpu"), draClaim("ctl", "", "none")).Obj(), cfg)
				apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 2)
				w := apps.TheWorkload(ctx, f, apps.StatefulSet(set))
				pg := apps.ThePodGroup(ctx, f, &w)
				shared := framework.WaitForPodGroupClaim(ctx, draClaimInput(f, &pg, "gpu"))
				ctl := framework.WaitForPodGroupClaim(ctx, draClaimInput(f, &pg, "ctl"))
				draExpectPodsShare(ctx, f, set, 2, "gpu", shared)
				before := apps.Read(ctx, f, apps.StatefulSet(set))

				ginkgo.By("rolling out a pod template whose gpu claim names template gpu-own")
				_, err := framework.Intent.UpdateStatefulSet(ctx, f.Namespace, set.Name, func(s *appsv1.StatefulSet, _ **framework.StatefulSetScheduling) {
					s.Spec.Template.Spec.ResourceClaims[0].ResourceClaimTemplateName = ptr.To("gpu-own")
				})
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "updating the pod template")
				waitForRollout(ctx, f, set, 2)

				pods, err := framework.ListPods(ctx, apps.Pods(f, apps.StatefulSet(set)))
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				claims, err := framework.ListClaims(ctx, f.ClientSet, f.Namespace)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				byName := map[string]resourcev1.ResourceClaim{}
				for _, c := range claims {
					byName[c.Name] = c
				}
				for _, p := range pods {
					gomega.Expect(p.UID).NotTo(gomega.Equal(before.PodUIDs()[p.Name]), "pod %s was replaced by the rolling update", p.Name)
					gomega.Expect(framework.PodClaimName(&p, "ctl")).To(gomega.Equal(ctl.Name), "matching claim ctl of pod %s still uses the PodGroup's claim", p.Name)
					own, ok := byName[framework.PodClaimName(&p, "gpu")]
					gomega.Expect(ok).To(gomega.BeTrue(), "pod %s resolved gpu to no claim: %v", p.Name, p.Status.ResourceClaimStatuses)
					gomega.Expect(own.Name).NotTo(gomega.Equal(shared.Name), "nonmatching claim gpu of pod %s must not use the PodGroup's claim", p.Name)
					gomega.Expect(metav1.IsControlledBy(&own, &p)).To(gomega.BeTrue(), "the nonmatching claim %s is generated for pod %s: %v", own.Name, p.Name, own.OwnerReferences)
					gomega.Expect(framework.ReservedOnlyFor(&own, framework.PodConsumer(&p))).To(gomega.BeTrue(), "%s is reserved for pod %s alone", framework.StateOf(&own), p.Name)
					gomega.Expect(p.Spec.NodeName).To(gomega.Equal(framework.ClaimNode(&own)), "pod %s runs where its own device is", p.Name)
				}
				gomega.Expect(claims).To(gomega.HaveLen(4), "the PodGroup's two claims and one per pod: %v", apps.Names(claims))
				ginkgo.By("the PodGroup's gpu claim, used by no pod now, stays allocated and reserved for the PodGroup")
				now := framework.WaitForPodGroupClaim(ctx, draClaimInput(f, &pg, "gpu"))
				gomega.Expect(framework.StateOf(now)).To(gomega.Equal(framework.StateOf(shared)), "the unused shared claim is unchanged")
				gomega.Expect(now.Status.Allocation.Devices).To(gomega.Equal(shared.Status.Allocation.Devices), "it still holds its device")
			})
	})

// draClaim is a claim entry from a named claim or a template (one of them empty).
func draClaim(name, claimName, templateName string) schedulingv1alpha3.WorkloadPodGroupResourceClaim {
	c := schedulingv1alpha3.WorkloadPodGroupResourceClaim{Name: name}
	if claimName != "" {
		c.ResourceClaimName = ptr.To(claimName)
	}
	if templateName != "" {
		c.ResourceClaimTemplateName = ptr.To(templateName)
	}
	return c
}

// draGang is gang intent with claims.
func draGang(claims ...schedulingv1alpha3.WorkloadPodGroupResourceClaim) *framework.StatefulSetScheduling {
	cfg := gang()
	cfg.ResourceClaims = claims
	return cfg
}

// draPodGroupClaims is what the PodGroup (and Workload template) must carry for cfg.
func draPodGroupClaims(cfg *framework.StatefulSetScheduling) []schedulingv1beta1.PodGroupResourceClaim {
	out := make([]schedulingv1beta1.PodGroupResourceClaim, 0, len(cfg.ResourceClaims))
	for _, c := range cfg.ResourceClaims {
		out = append(out, schedulingv1beta1.PodGroupResourceClaim{Name: c.Name, ResourceClaimName: c.ResourceClaimName, ResourceClaimTemplateName: c.ResourceClaimTemplateName})
	}
	return out
}

// draSet is a Parallel StatefulSet of small pods (all pods sharing a device
// claim land on its one node) whose template declares claims, each matching
// the PodGroup entry of the same name and source.
func draSet(f *framework.Framework, name string, replicas int32, claims ...schedulingv1alpha3.WorkloadPodGroupResourceClaim) *builder.StatefulSetWrapper {
	return parallel(f, name, replicas, "100m").PodTemplate(func(p *builder.PodWrapper) {
		for _, c := range claims {
			p.ResourceClaim(c.Name, ptr.Deref(c.ResourceClaimName, ""), ptr.Deref(c.ResourceClaimTemplateName, ""))
		}
	})
}

func draClaimInput(f *framework.Framework, pg *schedulingv1beta1.PodGroup, entry string) framework.PodGroupClaimInput {
	return framework.PodGroupClaimInput{ClientSet: f.ClientSet, Namespace: f.Namespace, PodGroup: pg.Name, Entry: entry}
}

// draExpectOnlyClaims asserts the namespace holds exactly these claims (by
// UID): no claim was generated per pod or recreated.
func draExpectOnlyClaims(ctx context.Context, f *framework.Framework, want ...*resourcev1.ResourceClaim) {
	ginkgo.GinkgoHelper()
	claims, err := framework.ListClaims(ctx, f.ClientSet, f.Namespace)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	var got, wanted []string
	for _, c := range claims {
		got = append(got, c.Name+"/"+string(c.UID))
	}
	for _, c := range want {
		wanted = append(wanted, c.Name+"/"+string(c.UID))
	}
	gomega.Expect(got).To(gomega.ConsistOf(wanted), "ResourceClaims of the namespace")
}

// draExpectPodsShare asserts set has n pods, each resolving entry to claim
// and running on its device's node.
func draExpectPodsShare(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet, n int, entry string, claim *resourcev1.ResourceClaim) {
	ginkgo.GinkgoHelper()
	pods, err := framework.ListPods(ctx, apps.Pods(f, apps.StatefulSet(set)))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(pods).To(gomega.HaveLen(n), "pods of %s: %v", set.Name, apps.Names(pods))
	for _, p := range pods {
		gomega.Expect(p.Status.Phase).To(gomega.Equal(corev1.PodRunning), "pod %s", p.Name)
	}
	framework.ExpectPodsShareClaim(pods, entry, claim)
	logf("%s shared by %v", framework.StateOf(claim), apps.Names(pods))
}
