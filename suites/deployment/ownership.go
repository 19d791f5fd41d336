package deployment

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
)

var _ = ginkgo.Describe("Deployment Workload and PodGroup contents and ownership", framework.KEP(6276),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment), func() {
		f := framework.New("deploy-owner")

		// KEP-6276, workloadbuilder Integration: "The builder preserves the
		// configured scheduling constraints, disruption mode, and resource
		// claims"; the Workload is "the shared scheduling template" and each
		// PodGroup is materialized "from the Workload's sole PodGroupTemplate".
		// So every part of the intent must be in the Workload's template, not
		// only on the PodGroup, and the PodGroup must carry the same.
		ginkgo.DescribeTable("compiles constraints, disruptionMode and claims into the Workload's template, and stamps the PodGroup from it", framework.ID("D-U1", "D-U2", "D-I1"),
			func(ctx context.Context, cfg *framework.DeploymentScheduling, claimTemplate bool, wantMinCount int32) {
				dep := recreate(f, "complete", 3, "100m")
				if claimTemplate {
					framework.CreateResourceClaimTemplate(ctx, f, "gpu", 1)
					dep = draTemplateDeployment(f, "complete", 3).Recreate()
				}
				d := create(ctx, dep.Obj(), cfg)
				w := theWorkload(ctx, f, d)
				gomega.Expect(w.Spec.PodGroupTemplates).To(gomega.HaveLen(1), "one PodGroupTemplate")
				t := w.Spec.PodGroupTemplates[0]
				gomega.Expect(t.SchedulingPolicy.Gang).NotTo(gomega.BeNil(), "the template's policy must be gang")
				gomega.Expect(t.SchedulingPolicy.Gang.MinCount).To(gomega.Equal(wantMinCount), "the template's gang minCount")
				expectSameJSON("the Workload template's schedulingConstraints", t.SchedulingConstraints, cfg.SchedulingConstraints)
				expectSameJSON("the Workload template's disruptionMode", t.DisruptionMode, cfg.DisruptionMode)
				expectSameJSON("the Workload template's resourceClaims", t.ResourceClaims, cfg.ResourceClaims)

				pg := thePodGroup(ctx, f)
				gomega.Expect(pg.Spec.WorkloadRef).To(gomega.HaveValue(gomega.Equal(schedulingv1beta1.WorkloadReference{
					WorkloadName: w.Name, TemplateName: t.Name})), "PodGroup %s workloadRef", pg.Name)
				gomega.Expect(pg.Spec.SchedulingPolicy).To(gomega.Equal(t.SchedulingPolicy), "PodGroup %s schedulingPolicy", pg.Name)
				expectSameJSON("the PodGroup's schedulingConstraints", pg.Spec.SchedulingConstraints, t.SchedulingConstraints)
				wantMode := t.DisruptionMode
				if wantMode == nil { // the PodGroup API defaults it
					wantMode = &schedulingv1beta1.DisruptionMode{Single: &schedulingv1beta1.SingleDisruptionMode{}}
				}
				expectSameJSON("the PodGroup's disruptionMode", pg.Spec.DisruptionMode, wantMode)
				expectSameJSON("the PodGroup's resourceClaims", pg.Spec.ResourceClaims, t.ResourceClaims)
			},
			ginkgo.Entry("disruptionMode all", withDisruption(gang(nil), true), false, int32(3)),
			ginkgo.Entry("a topology constraint", framework.WithFeatureGate(framework.TopologyAwareWorkloadScheduling),
				withTopology(gang(nil), "topology.kubernetes.io/zone"), false, int32(3)),
			ginkgo.Entry("a template-backed resource claim", framework.WithFeatureGate(framework.DRAWorkloadResourceClaims),
				draGang(draTemplateClaim("gpu")), true, int32(3)),
			ginkgo.Entry("all of them, with an explicit minCount", framework.WithFeatureGate(framework.TopologyAwareWorkloadScheduling, framework.DRAWorkloadResourceClaims),
				withDisruption(withTopology(withClaims(gang(ptr.To[int32](2)), draTemplateClaim("gpu")), "topology.kubernetes.io/zone"), true), true, int32(2)),
		)

		// KEP-6276: "Deployments own the Workload for its lifecycle, and
		// ReplicaSets own individual PodGroups", "matching the Job pattern
		// (KEP-5547)": an owning controller's reference, as
		// metav1.NewControllerRef makes it and the 1.37 Job controller sets it,
		// has controller and blockOwnerDeletion, so a foreground deletion of
		// the owner waits for the object.
		ginkgo.It("gives the Workload and the PodGroup controller references with controller and blockOwnerDeletion", framework.ID("D-I7", "D-U1"), func(ctx context.Context) {
			d := create(ctx, recreate(f, "owned", 2, "100m").Obj(), gang(nil))
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 2)
			w := theWorkload(ctx, f, d)
			rss := replicaSets(ctx, f, d)
			gomega.Expect(rss).To(gomega.HaveLen(1))
			pg := thePodGroup(ctx, f)

			apps.ExpectOwner(w.OwnerReferences, apps.OwnerDeployment(d), true)
			apps.ExpectBlocksOwnerDeletion(w.OwnerReferences, apps.OwnerDeployment(d))
			apps.ExpectOwner(pg.OwnerReferences, apps.OwnerReplicaSet(&rss[0]), true)
			apps.ExpectBlocksOwnerDeletion(pg.OwnerReferences, apps.OwnerReplicaSet(&rss[0]))
			expectOwner(pg.OwnerReferences, "scheduling.k8s.io/v1beta1", "Workload", w.Name, string(w.UID), false)
			gomega.Expect(metav1.GetControllerOf(&w)).To(gomega.HaveValue(gomega.HaveField("UID", d.UID)), "the Workload's one controller")
			gomega.Expect(metav1.GetControllerOf(&pg)).To(gomega.HaveValue(gomega.HaveField("UID", rss[0].UID)), "the PodGroup's one controller")
		})

		// KEP-6276: "For Alpha, the Deployment and ReplicaSet controllers only
		// use objects they create and own." A PodGroup that has the name the
		// KEP gives the ReplicaSet's PodGroup but is controlled by another
		// ReplicaSet is not the ReplicaSet's: no pod may join it, and it is
		// neither changed nor deleted (also not at zero replicas). The decoy
		// is what the ReplicaSet's own PodGroup would be, stamped from the
		// Deployment's Workload with the upstream workloadbuilder (workloadRef
		// to its template, the Workload's ownerReference) in every respect but
		// its controller, so only the controller reference can tell them
		// apart. It is stamped at zero replicas, so its minCount is the
		// template's then, and the scale to 2 gives anything that syncs it
		// from the template a different value to write.
		ginkgo.It("never uses, changes or deletes a PodGroup of the expected name controlled by another ReplicaSet", framework.ID("D-U5", "D-U2"), func(ctx context.Context) {
			d := create(ctx, recreate(f, "squatted", 0, "100m").Obj(), gang(nil))
			var rs appsv1.ReplicaSet
			gomega.Eventually(ctx, func(ctx context.Context) []appsv1.ReplicaSet {
				rss := replicaSets(ctx, f, d)
				if len(rss) == 1 {
					rs = rss[0]
				}
				return rss
			}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.HaveLen(1), "waiting for the Deployment's ReplicaSet")
			name := d.Name + "-" + rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
			w := theWorkload(ctx, f, d)
			gomega.Expect(w.Spec.PodGroupTemplates).To(gomega.HaveLen(1), "the Deployment's Workload has one PodGroupTemplate")

			ginkgo.By("a PodGroup named " + name + ", stamped from template " + w.Spec.PodGroupTemplates[0].Name + " of Workload " + w.Name + ", controlled by another ReplicaSet")
			other := foreignReplicaSet(ctx, f, "another-owner")
			stamped, err := workloadbuilder.NewBuilderFromExistingWorkload(&w, workloadbuilder.BuildOptions{
				Owner: metav1.NewControllerRef(other, appsv1.SchemeGroupVersion.WithKind("ReplicaSet")),
			}).NewPodGroup(name, w.Spec.PodGroupTemplates[0].Name)
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "stamping the decoy PodGroup")
			decoy := builder.WrapPodGroup(stamped).OwnerReference(metav1.OwnerReference{
				APIVersion: schedulingv1beta1.SchemeGroupVersion.String(), Kind: "Workload", Name: w.Name, UID: w.UID}).Obj()
			foreign, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).Create(ctx, decoy, metav1.CreateOptions{})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())

			ginkgo.By("scaling the Deployment to 2")
			gomega.Expect(scale(ctx, f, d, 2)).To(gomega.Succeed())
			waitForWorkloadMinCount(ctx, f, d, 2)
			waitForReplicaSetReplicas(ctx, f, rs.Name, 2)
			expectUntouchedPodGroup(ctx, f, d, foreign)

			ginkgo.By("scaling the Deployment to 0")
			gomega.Expect(scale(ctx, f, d, 0)).To(gomega.Succeed())
			waitForReplicaSetReplicas(ctx, f, rs.Name, 0)
			expectUntouchedPodGroup(ctx, f, d, foreign)
		})

		// A Deployment deleted with orphaning leaves its ReplicaSet, Workload
		// and PodGroup behind; a new Deployment of the same name is another
		// object (another UID). KEP-6276 names the Workload "<deployment.Name>-
		// <hash>" where "the hash is derived from the Deployment UID", and its
		// controllers "only use objects they create and own": the new
		// Deployment gets a Workload of its own, the orphaned Workload is not
		// adopted or changed, and the pods it creates join a PodGroup stamped
		// from its own Workload, never the orphaned one's.
		ginkgo.DescribeTable("gives a Deployment recreated under the same name after an orphaning delete its own Workload and PodGroup", framework.ID("D-I7", "D-U5"),
			func(ctx context.Context, sameTemplate bool) {
				d1 := create(ctx, recreate(f, "reborn", 2, "100m").Obj(), gang(nil))
				framework.WaitForPodsRunning(ctx, podsOf(f, d1), 2)
				waitForGangState(ctx, f, d1, 2, true)
				original := podUIDs(ctx, f, d1)
				rs1 := replicaSets(ctx, f, d1)[0]

				ginkgo.By("deleting Deployment " + d1.Name + " with propagationPolicy Orphan")
				gomega.Expect(f.ClientSet.AppsV1().Deployments(f.Namespace).Delete(ctx, d1.Name, metav1.DeleteOptions{
					PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)})).To(gomega.Succeed())
				waitGone(ctx, f, "Deployment "+d1.Name, func(ctx context.Context) error {
					_, err := f.ClientSet.AppsV1().Deployments(f.Namespace).Get(ctx, d1.Name, metav1.GetOptions{})
					return err
				})
				var w1 schedulingv1beta1.Workload
				gomega.Eventually(ctx, func(ctx context.Context) ([]metav1.OwnerReference, error) {
					got, err := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).List(ctx, metav1.ListOptions{})
					if err != nil || len(got.Items) != 1 {
						return nil, fmt.Errorf("want the one orphaned Workload, got %d (%v)", len(got.Items), err)
					}
					w1 = got.Items[0]
					return w1.OwnerReferences, nil
				}).WithTimeout(f.Timeouts.Cleanup).WithPolling(f.Timeouts.Poll).Should(gomega.BeEmpty(), "waiting for the garbage collector to orphan the Workload")
				pg1 := thePodGroup(ctx, f)

				d2spec := recreate(f, "reborn", 2, "100m")
				if !sameTemplate {
					d2spec = recreate(f, "reborn", 2, "150m")
				}
				ginkgo.By("recreating Deployment " + d1.Name)
				d2 := create(ctx, d2spec.Obj(), gang(nil))
				gomega.Expect(d2.UID).NotTo(gomega.Equal(d1.UID))
				w2 := theWorkload(ctx, f, d2)
				gomega.Expect(w2.UID).NotTo(gomega.Equal(w1.UID), "the recreated Deployment adopted the orphaned Workload")
				gomega.Expect(w2.Name).NotTo(gomega.Equal(w1.Name), "the Workload name must derive from the Deployment's UID")

				if sameTemplate {
					ginkgo.By("the orphaned ReplicaSet " + rs1.Name + " is adopted (upstream); scaling to 3 makes the new Deployment create a pod")
					gomega.Expect(scale(ctx, f, d2, 3)).To(gomega.Succeed())
					waitForWorkloadMinCount(ctx, f, d2, 3)
					waitForReplicaSetReplicas(ctx, f, rs1.Name, 3)
					// The adopted ReplicaSet's PodGroup name is taken by the
					// orphaned PodGroup of the old Workload, which the new
					// Deployment must not use. The KEP leaves open what to do
					// instead: make the pod in a PodGroup of the new Workload,
					// or make none and say so (a Warning event). Silence, or a
					// pod outside any group, fails (checkReborn).
					ginkgo.By("waiting for the new pod, or a Warning event on Deployment " + d2.Name + " or ReplicaSet " + rs1.Name)
					gomega.Eventually(ctx, func(ctx context.Context) (string, error) {
						return rebornReaction(ctx, f, original, d2.UID, rs1.UID)
					}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).ShouldNot(gomega.BeEmpty(),
						"the recreated Deployment neither made its third pod nor raised a Warning event")
				} else {
					ginkgo.By("a new pod template: the new Deployment rolls out a new ReplicaSet")
					gomega.Eventually(ctx, func(ctx context.Context) (int, error) {
						n := 0
						for uid := range podUIDs(ctx, f, d2) {
							if !original[uid] {
								n++
							}
						}
						s, err := framework.BindingState(ctx, podsOf(f, d2))
						if s.Running != 2 {
							return 0, err
						}
						return n, err
					}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal(2), "waiting for 2 new pods Running")
				}

				ginkgo.By("the orphaned Workload and PodGroup stay as they were; new pods join a PodGroup of the new Workload")
				gomega.Consistently(ctx, func(ctx context.Context) error {
					return checkReborn(ctx, f, d2, &w1, &w2, &pg1, original)
				}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.Succeed())
				if !sameTemplate {
					rs2 := newestReplicaSet(ctx, f, d2)
					pg2, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).Get(ctx, d2.Name+"-"+rs2.Labels[appsv1.DefaultDeploymentUniqueLabelKey], metav1.GetOptions{})
					gomega.Expect(err).NotTo(gomega.HaveOccurred(), "the new ReplicaSet's PodGroup")
					apps.ExpectOwner(pg2.OwnerReferences, apps.OwnerReplicaSet(&rs2), true)
					expectOwner(pg2.OwnerReferences, "scheduling.k8s.io/v1beta1", "Workload", w2.Name, string(w2.UID), false)
				}
			},
			ginkgo.Entry("with the same pod template (the orphaned ReplicaSet and its PodGroup name are reused)", true),
			ginkgo.Entry("with a new pod template (a new revision)", false),
		)

		// KEP-6276 relies on "the podgroup-protection finalizer on PodGroups"
		// to make "referencing pods drain before the PodGroup is deleted". In
		// 1.37 the PodGroupProtection admission plugin puts it on every
		// PodGroup at create, whatever the client sent, and the KEP does not
		// ask the Deployment's controllers to add it: the platform alone meets
		// this, so this spec proves the cluster, not the implementation, and
		// claims no test-plan id. It records whether the implementation's own
		// create request carried the finalizer anyway: managedFields are
		// computed from the request before mutating admission runs, so only a
		// client that sent the finalizer owns it there.
		ginkgo.It("keeps a PodGroup with the podgroup-protection finalizer until its pods are gone (the platform's PodGroupProtection)", framework.Harness, func(ctx context.Context) {
			d := create(ctx, recreate(f, "protected", 2, "100m").Obj(), gang(nil))
			framework.WaitForPodsRunning(ctx, podsOf(f, d), 2)
			original := podUIDs(ctx, f, d)
			pg := thePodGroup(ctx, f)
			gomega.Expect(pg.Finalizers).To(gomega.ContainElement(framework.PodGroupProtectionFinalizer), "PodGroup %s", pg.Name)
			senders := framework.ManagersThatSet(&pg, framework.FinalizerField(framework.PodGroupProtectionFinalizer)...)
			sent := "no client: the PodGroupProtection admission plugin added it"
			if len(senders) > 0 {
				sent = fmt.Sprintf("the create or update request of %v", senders)
			}
			ginkgo.AddReportEntry("podgroup-protection finalizer sent by", sent)
			ginkgo.GinkgoWriter.Printf("the podgroup-protection finalizer on PodGroup %s was sent by %s\n", pg.Name, sent)

			h := framework.RecordWrites(ctx, f.Namespace, framework.PodGroupsResource, framework.PodsResource)
			ginkgo.By("deleting PodGroup " + pg.Name + " while its pods run: it stays, terminating")
			gomega.Expect(f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).Delete(ctx, pg.Name, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &pg.UID}})).To(gomega.Succeed())
			h.WaitFirst(ctx, "podgroups", "PodGroup "+pg.Name+" terminating", framework.Terminating(pg.Name))
			gomega.Consistently(ctx, func(ctx context.Context) error {
				_, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).Get(ctx, pg.Name, metav1.GetOptions{})
				return err
			}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.Succeed(), "the PodGroup went while its pods ran")

			ginkgo.By("scaling to 0: the PodGroup goes after its last pod")
			gomega.Expect(scale(ctx, f, d, 0)).To(gomega.Succeed())
			gone := h.WaitFirst(ctx, "podgroups", "PodGroup "+pg.Name+" deleted", func(c framework.Change) bool {
				return c.UID == string(pg.UID) && c.Type == watch.Deleted
			})
			pods, err := framework.ListPods(ctx, podsOf(f, d))
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(pods).To(gomega.BeEmpty(), "the PodGroup is gone, its pods are not")
			for uid := range original {
				drained, ok := h.First("pods", func(c framework.Change) bool { return c.UID == uid && c.Terminating })
				gomega.Expect(ok).To(gomega.BeTrue(), "pod %s was never seen terminating:\n%s", uid, h)
				gomega.Expect(drained.Revision).To(gomega.BeNumerically("<", gone.Revision), "PodGroup %s was deleted before pod %s began to terminate:\n%s", pg.Name, drained.Name, h)
			}
		})
	})

// thePodGroup waits until the namespace has exactly one live PodGroup and returns it.
func thePodGroup(ctx context.Context, f *framework.Framework) schedulingv1beta1.PodGroup {
	var got []schedulingv1beta1.PodGroup
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) []schedulingv1beta1.PodGroup {
		got = nil
		for _, pg := range podGroups(ctx, f) {
			if pg.DeletionTimestamp == nil {
				got = append(got, pg)
			}
		}
		return got
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.HaveLen(1), "waiting for exactly one live PodGroup")
	return got[0]
}

// expectSameJSON compares an object field with the intent's building block by
// their JSON: the v1beta1 and v1alpha3 types share field names and shapes.
// Null members, empty lists and a wholly empty field are the same as an
// absent one (an unset field may be serialized as any of them); an empty
// object below the top ({"all":{}}) is a union member and counts.
func expectSameJSON(what string, got, want any) {
	gomega.ExpectWithOffset(1, prunedJSON(got)).To(gomega.MatchJSON(prunedJSON(want)), "%s: want what spec.scheduling says", what)
}

// prunedJSON is v as JSON without null members or empty lists; "null" when
// nothing is left. v is an API type, which always marshals.
func prunedJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshalling %T: %v", v, err))
	}
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		panic(fmt.Sprintf("unmarshalling %T: %v", v, err))
	}
	generic = prune(generic)
	if m, ok := generic.(map[string]any); ok && len(m) == 0 {
		generic = nil
	}
	out, _ := json.Marshal(generic) // plain maps, lists and scalars
	return string(out)
}

func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range t {
			if p := prune(e); p != nil {
				out[k] = p
			}
		}
		return out
	case []any:
		if len(t) == 0 {
			return nil
		}
		out := make([]any, 0, len(t))
		for _, e := range t {
			out = append(out, prune(e))
		}
		return out
	}
	return v
}

// foreignReplicaSet creates a ReplicaSet of no pods whose selector matches
// no Deployment's pods, to own objects the Deployment must leave alone.
func foreignReplicaSet(ctx context.Context, f *framework.Framework, name string) *appsv1.ReplicaSet {
	labels := map[string]string{"was-harness.io/foreign": name}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       builder.Pod(name, f.Namespace).Obj().Spec,
			},
		},
	}
	created, err := f.ClientSet.AppsV1().ReplicaSets(f.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "creating ReplicaSet %s", name)
	return created
}

// waitForWorkloadMinCount waits until d's one Workload has template minCount want.
func waitForWorkloadMinCount(ctx context.Context, f *framework.Framework, d *appsv1.Deployment, want int32) {
	ginkgo.GinkgoHelper()
	apps.WaitForState(ctx, f, apps.Deployment(d), fmt.Sprintf("the Workload at minCount %d", want),
		gomega.HaveField("Workloads", gomega.ConsistOf(gomega.HaveField("MinCount", want))))
}

// waitForReplicaSetReplicas waits until ReplicaSet name wants replicas pods
// and its controller has seen that (observedGeneration).
func waitForReplicaSetReplicas(ctx context.Context, f *framework.Framework, name string, replicas int32) {
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) (string, error) {
		rs, err := f.ClientSet.AppsV1().ReplicaSets(f.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("replicas=%d observed=%t", ptr.Deref(rs.Spec.Replicas, 1), rs.Status.ObservedGeneration >= rs.Generation), nil
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal(fmt.Sprintf("replicas=%d observed=true", replicas)),
		"waiting for ReplicaSet %s at %d replicas", name, replicas)
}

// expectUntouchedPodGroup asserts, for StaysUnbound, that PodGroup pg is
// unchanged (same UID and resourceVersion, not being deleted) and that no pod
// of d joined it.
func expectUntouchedPodGroup(ctx context.Context, f *framework.Framework, d *appsv1.Deployment, pg *schedulingv1beta1.PodGroup) {
	gomega.ConsistentlyWithOffset(1, ctx, func(ctx context.Context) error {
		got, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).Get(ctx, pg.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("PodGroup %s was deleted", pg.Name)
		case err != nil:
			return err
		case got.UID != pg.UID:
			return fmt.Errorf("PodGroup %s was replaced (UID %s, was %s)", pg.Name, got.UID, pg.UID)
		case got.DeletionTimestamp != nil:
			return fmt.Errorf("PodGroup %s is being deleted", pg.Name)
		case got.ResourceVersion != pg.ResourceVersion:
			return fmt.Errorf("PodGroup %s was written (resourceVersion %s, was %s): spec %+v, ownerReferences %v",
				pg.Name, got.ResourceVersion, pg.ResourceVersion, got.Spec, got.OwnerReferences)
		}
		pods, err := framework.ListPods(ctx, podsOf(f, d))
		if err != nil {
			return err
		}
		for _, p := range pods {
			if sg := p.Spec.SchedulingGroup; sg != nil && ptr.Deref(sg.PodGroupName, "") == pg.Name {
				return fmt.Errorf("pod %s joined PodGroup %s, which another ReplicaSet controls", p.Name, pg.Name)
			}
		}
		return nil
	}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.Succeed())
}

// checkReborn returns an error if the orphaned Workload w1 or PodGroup pg1
// changed hands or content, or a pod of the recreated Deployment d2 that
// was not among the original pods joined a PodGroup of a Workload other than w2.
func checkReborn(ctx context.Context, f *framework.Framework, d2 *appsv1.Deployment, w1, w2 *schedulingv1beta1.Workload, pg1 *schedulingv1beta1.PodGroup, original map[string]bool) error {
	w, err := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).Get(ctx, w1.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("the orphaned Workload %s: %w", w1.Name, err)
	}
	if w.UID != w1.UID || w.ResourceVersion != w1.ResourceVersion {
		return fmt.Errorf("the orphaned Workload %s was written: ownerReferences %v, templates %+v", w1.Name, w.OwnerReferences, w.Spec.PodGroupTemplates)
	}
	pg, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).Get(ctx, pg1.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		// Deleted with its ReplicaSet at zero replicas: nothing left to adopt.
	case err != nil:
		return err
	case pg.UID == pg1.UID:
		for _, r := range pg.OwnerReferences {
			if r.UID == w2.UID || r.UID == d2.UID {
				return fmt.Errorf("the orphaned PodGroup %s was adopted: ownerReferences %v", pg1.Name, pg.OwnerReferences)
			}
		}
		if pg.DeletionTimestamp == nil && !equalJSON(pg.Spec, pg1.Spec) {
			return fmt.Errorf("the orphaned PodGroup %s was changed: spec %+v, was %+v", pg1.Name, pg.Spec, pg1.Spec)
		}
	}
	pods, err := framework.ListPods(ctx, podsOf(f, d2))
	if err != nil {
		return err
	}
	// KEP-6276: "The ReplicaSet controller sets pod.spec.schedulingGroup.
	// podGroupName at pod creation time"; "Pods also reference their
	// PodGroup through spec.schedulingGroup.podGroupName", the PodGroup of
	// their ReplicaSet, stamped from the Deployment's Workload. A new pod
	// without one would bypass the gang.
	for _, p := range pods {
		if original[string(p.UID)] {
			continue
		}
		sg := p.Spec.SchedulingGroup
		if sg == nil || sg.PodGroupName == nil {
			return fmt.Errorf("pod %s of the recreated Deployment has no spec.schedulingGroup.podGroupName", p.Name)
		}
		joined, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).Get(ctx, *sg.PodGroupName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("pod %s names PodGroup %s: %w", p.Name, *sg.PodGroupName, err)
		}
		if ref := joined.Spec.WorkloadRef; ref == nil || ref.WorkloadName != w2.Name {
			return fmt.Errorf("pod %s of the recreated Deployment joined PodGroup %s, whose workloadRef is %+v, not the new Workload %s",
				p.Name, joined.Name, ref, w2.Name)
		}
		if rs := metav1.GetControllerOf(&p); rs == nil || !metav1.IsControlledBy(joined, &metav1.ObjectMeta{UID: rs.UID}) {
			return fmt.Errorf("pod %s joined PodGroup %s, which its ReplicaSet does not control: ownerReferences %v", p.Name, joined.Name, joined.OwnerReferences)
		}
	}
	return nil
}

// rebornReaction says how the recreated Deployment answered a scale-up: a
// pod not among original, or a Warning event on the Deployment or its
// adopted ReplicaSet (by UID); "" while neither.
func rebornReaction(ctx context.Context, f *framework.Framework, original map[string]bool, uids ...types.UID) (string, error) {
	pods, err := framework.ListPods(ctx, framework.PodsInput{ClientSet: f.ClientSet, Namespace: f.Namespace})
	if err != nil {
		return "", err
	}
	for _, p := range pods {
		if !original[string(p.UID)] {
			return "pod " + p.Name, nil
		}
	}
	events, err := f.ClientSet.CoreV1().Events(f.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning && slices.Contains(uids, e.InvolvedObject.UID) {
			ginkgo.GinkgoWriter.Printf("Warning %s on %s %s: %s\n", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
			return "event " + e.Reason, nil
		}
	}
	return "", nil
}

// newestReplicaSet returns the ReplicaSet of d with the highest revision.
func newestReplicaSet(ctx context.Context, f *framework.Framework, d *appsv1.Deployment) appsv1.ReplicaSet {
	var newest appsv1.ReplicaSet
	best := -1
	for _, rs := range replicaSets(ctx, f, d) {
		if rev, err := strconv.Atoi(rs.Annotations["deployment.kubernetes.io/revision"]); err == nil && rev > best {
			best, newest = rev, rs
		}
	}
	gomega.ExpectWithOffset(1, best).To(gomega.BeNumerically(">=", 0), "Deployment %s has no ReplicaSet with a revision", d.Name)
	return newest
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
