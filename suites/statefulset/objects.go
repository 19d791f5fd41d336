package statefulset

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
)

var _ = ginkgo.Describe("StatefulSet Workload and PodGroup", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("sts-objects")

		ginkgo.It("creates the Workload, then the PodGroup with its protection finalizer in the create, before any pod, and wires every pod to the PodGroup", framework.ID("S-I1", "S-U4", "S-U10"), func(ctx context.Context) {
			rec := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource, framework.PodsResource)
			set := create(ctx, parallel(f, "ordered", 3, "100m").Obj(), gang())
			apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 3)
			gomega.Eventually(func() int { return len(rec.Creations("pods")) }).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal(3),
				"waiting for the recorder to see the 3 pod creations:\n%s", rec)
			rec.Stop()

			w := apps.TheWorkload(ctx, f, apps.StatefulSet(set))
			pg := apps.ThePodGroup(ctx, f, &w)
			workloads, pgs, pods := rec.Creations("workloads"), rec.Creations("podgroups"), rec.Creations("pods")
			gomega.Expect(workloads).To(gomega.HaveLen(1), "exactly one Workload creation:\n%s", rec)
			gomega.Expect(workloads[0].UID).To(gomega.Equal(string(w.UID)), "the created Workload is the one discovered by spec.controllerRef:\n%s", rec)
			gomega.Expect(pgs).To(gomega.HaveLen(1), "exactly one PodGroup creation:\n%s", rec)
			gomega.Expect(pgs[0].UID).To(gomega.Equal(string(pg.UID)), "the created PodGroup is the one discovered by spec.workloadRef:\n%s", rec)
			gomega.Expect(workloads[0].Revision).To(gomega.BeNumerically("<", pgs[0].Revision), "the PodGroup was created before its Workload:\n%s", rec)
			gomega.Expect(pgs[0].Revision).To(gomega.BeNumerically("<", pods[0].Revision), "a pod was created before the PodGroup:\n%s", rec)

			ginkgo.By("the Workload: controllerRef, controller ownerReference, managed-by, one gang template of minCount = replicas")
			gomega.Expect(w.Spec.ControllerRef).To(gomega.HaveValue(gomega.Equal(apps.StatefulSet(set).ControllerRef())))
			apps.ExpectOwner(w.OwnerReferences, apps.OwnerStatefulSet(set), true)
			gomega.Expect(w.Annotations).To(gomega.HaveKeyWithValue(managedByAnnotation, managedByStatefulSetController))
			gomega.Expect(w.Spec.PodGroupTemplates).To(gomega.HaveLen(1), "one PodGroupTemplate")
			gomega.Expect(framework.WorkloadMinCount(&w)).To(gomega.Equal(int32(3)), "gang minCount derived from spec.replicas")

			ginkgo.By("the PodGroup: workloadRef to the template, owned by the StatefulSet (controller) and the Workload")
			gomega.Expect(pg.Spec.WorkloadRef).To(gomega.HaveValue(gomega.Equal(schedulingv1beta1.WorkloadReference{
				WorkloadName: w.Name, TemplateName: w.Spec.PodGroupTemplates[0].Name})))
			gomega.Expect(framework.PodGroupMinCount(&pg)).To(gomega.Equal(int32(3)))
			apps.ExpectOwner(pg.OwnerReferences, apps.OwnerStatefulSet(set), true)
			apps.ExpectOwner(pg.OwnerReferences, apps.OwnerWorkload(&w), false)
			gomega.Expect(pg.Annotations).To(gomega.HaveKeyWithValue(managedByAnnotation, managedByStatefulSetController))

			ginkgo.By("the PodGroup's create request carried the podgroup-protection finalizer (managedFields), not only the platform's admission")
			expectCreatedWithProtectionFinalizer(&pg, set)

			ginkgo.By("the ownerReferences to the StatefulSet, and the PodGroup's to its Workload, block the owner's deletion (the KEP's ownership model)")
			apps.ExpectBlocksOwnerDeletion(w.OwnerReferences, apps.OwnerStatefulSet(set))
			apps.ExpectBlocksOwnerDeletion(pg.OwnerReferences, apps.OwnerStatefulSet(set))
			apps.ExpectBlocksOwnerDeletion(pg.OwnerReferences, apps.OwnerWorkload(&w))

			ginkgo.By("every pod names the PodGroup and is owned by the StatefulSet (controller) and the PodGroup")
			apps.ExpectPodsInGroup(ctx, f, apps.StatefulSet(set), apps.OwnerStatefulSet(set), &pg, 3)
			stored, err := f.ClientSet.AppsV1().StatefulSets(f.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(stored.Spec.Template.Spec.SchedulingGroup).To(gomega.BeNil(), "the StatefulSet's stored pod template must not change")
		})

		ginkgo.It("keeps the same PodGroup through a rolling update with partition 0; recreated pods keep its name", framework.ID("S-I6", "S-U9"), func(ctx context.Context) {
			set := create(ctx, parallel(f, "rolling", 3, "100m").Partition(0).Obj(), gang())
			apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 3)
			before := apps.WaitForMinCounts(ctx, f, apps.StatefulSet(set), 3)
			w := apps.TheWorkload(ctx, f, apps.StatefulSet(set))
			pg := apps.ThePodGroup(ctx, f, &w)

			ginkgo.By("changing the pod template")
			_, err := framework.Intent.UpdateStatefulSet(ctx, f.Namespace, set.Name, func(s *appsv1.StatefulSet, _ **framework.StatefulSetScheduling) {
				builder.SetRevision(&s.Spec.Template, "2")
			})
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "updating the pod template of %s", set.Name)
			waitForRollout(ctx, f, set, 3)

			ginkgo.By("every pod was recreated, into the same PodGroup")
			pods, err := framework.ListPods(ctx, apps.Pods(f, apps.StatefulSet(set)))
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			for _, p := range pods {
				gomega.Expect(p.UID).NotTo(gomega.Equal(before.PodUIDs()[p.Name]), "pod %s was not recreated by the rolling update", p.Name)
				gomega.Expect(p.Annotations).To(gomega.HaveKeyWithValue(builder.RevisionAnnotation, "2"), "pod %s", p.Name)
			}
			apps.ExpectPodsInGroup(ctx, f, apps.StatefulSet(set), apps.OwnerStatefulSet(set), &pg, 3)
			now := apps.Read(ctx, f, apps.StatefulSet(set))
			gomega.Expect(now).To(apps.AtMinCount(3), "one Workload and one PodGroup for the StatefulSet's whole life; a rolling update does not change minCount")
			apps.ExpectSameObjects(now, before)
		})

		ginkgo.DescribeTable("deletes the Workload, the PodGroup and every pod with the StatefulSet", framework.ID("S-I7", "S-E11"),
			func(ctx context.Context, propagation metav1.DeletionPropagation) {
				set := create(ctx, parallel(f, "gc", 3, "100m").Obj(), gang())
				apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 3)
				w := apps.TheWorkload(ctx, f, apps.StatefulSet(set))
				pg := apps.ThePodGroup(ctx, f, &w)

				gomega.Expect(f.ClientSet.AppsV1().StatefulSets(f.Namespace).Delete(ctx, set.Name, metav1.DeleteOptions{
					PropagationPolicy: ptr.To(propagation)})).To(gomega.Succeed())
				gomega.Eventually(ctx, func(ctx context.Context) []string {
					var left []string
					if _, err := f.ClientSet.AppsV1().StatefulSets(f.Namespace).Get(ctx, set.Name, metav1.GetOptions{}); err == nil {
						left = append(left, "statefulset/"+set.Name)
					}
					if _, err := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).Get(ctx, w.Name, metav1.GetOptions{}); err == nil {
						left = append(left, "workload/"+w.Name)
					}
					if _, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).Get(ctx, pg.Name, metav1.GetOptions{}); err == nil {
						left = append(left, "podgroup/"+pg.Name)
					}
					pods, _ := framework.ListPods(ctx, apps.Pods(f, apps.StatefulSet(set)))
					for _, p := range pods {
						left = append(left, "pod/"+p.Name)
					}
					return left
				}).WithTimeout(f.Timeouts.Cleanup).WithPolling(f.Timeouts.Poll).Should(gomega.BeEmpty(),
					"waiting for the %s deletion of StatefulSet %s to remove its Workload, PodGroup and pods", propagation, set.Name)
			},
			// Background is kubectl's default and the case where a pod's
			// ownerReference to a terminating PodGroup could hold it forever.
			ginkgo.Entry("in the background", metav1.DeletePropagationBackground),
			ginkgo.Entry("in the foreground", metav1.DeletePropagationForeground),
		)

		ginkgo.It("gives an OrderedReady StatefulSet a Basic Workload and PodGroup and keeps creating its pods one at a time", framework.ID("S-E9"), func(ctx context.Context) {
			h := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource, framework.PodsResource)
			set := builder.StatefulSet("ordered-ready", f.Namespace).Replicas(3).OrderedReady().Request(corev1.ResourceCPU, "100m").Obj()
			set = create(ctx, set, basic())
			apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 3)

			w := apps.TheWorkload(ctx, f, apps.StatefulSet(set))
			gomega.Expect(w.Spec.PodGroupTemplates).To(gomega.HaveLen(1))
			gomega.Expect(w.Spec.PodGroupTemplates[0].SchedulingPolicy.Basic).NotTo(gomega.BeNil(), "the Workload template must be Basic: %+v", w.Spec.PodGroupTemplates[0].SchedulingPolicy)
			gomega.Expect(w.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang).To(gomega.BeNil())
			pg := apps.ThePodGroup(ctx, f, &w)
			gomega.Expect(pg.Spec.SchedulingPolicy.Basic).NotTo(gomega.BeNil(), "the PodGroup must be Basic: %+v", pg.Spec.SchedulingPolicy)
			gomega.Expect(pg.Spec.SchedulingPolicy.Gang).To(gomega.BeNil())
			apps.ExpectPodsInGroup(ctx, f, apps.StatefulSet(set), apps.OwnerStatefulSet(set), &pg, 3)

			ginkgo.By("each pod is created only after the previous one is Running and Ready (etcd revisions)")
			for i := 1; i < 3; i++ {
				prevReady := h.WaitFirst(ctx, "pods", podName(set, i-1)+" Ready", framework.BecameReady(podName(set, i-1)))
				next := h.WaitFirst(ctx, "pods", podName(set, i)+" created", framework.Created(podName(set, i)))
				gomega.Expect(prevReady.Revision).To(gomega.BeNumerically("<", next.Revision),
					"pod %s was created before pod %s was Ready; OrderedReady must stay sequential:\n%s", podName(set, i), podName(set, i-1), h)
			}
			logf("OrderedReady pod writes in revision order:\n%s", h)
		})
	})

// expectCreatedWithProtectionFinalizer asserts KEP-6277's "The finalizer is
// added at PodGroup creation" of the controller, in a way only the
// controller can meet. Its presence proves nothing in 1.37: the
// PodGroupProtection admission plugin adds it to every PodGroup whose create
// lacks it. Who sent it shows in managedFields: the apiserver computes a
// create's entry from the request before mutating admission runs, so the
// plugin's addition belongs to no manager; and an update owns only the fields
// it changes, which a finalizer present since the create is not. The client
// that sent the PodGroup's controller reference to the StatefulSet is the
// implementation, so its entry must own the finalizer too. (A later
// server-side apply of the finalizer would also own it; an implementation
// that applies instead of creating is not told apart.)
func expectCreatedWithProtectionFinalizer(pg *schedulingv1beta1.PodGroup, set *appsv1.StatefulSet) {
	ginkgo.GinkgoHelper()
	gomega.Expect(pg.Finalizers).To(gomega.ContainElement(framework.PodGroupProtectionFinalizer), "PodGroup %s", pg.Name)
	fields := framework.DescribeManagedFields(pg)
	ginkgo.AddReportEntry("PodGroup "+pg.Name+" managedFields", fields)
	creators := framework.ManagersThatSet(pg, framework.OwnerReferenceField(set.UID)...)
	gomega.Expect(creators).NotTo(gomega.BeEmpty(),
		"no managedFields entry of PodGroup %s owns its ownerReference to StatefulSet %s, so its creator is unknown; managedFields:\n%s", pg.Name, set.Name, fields)
	senders := framework.ManagersThatSet(pg, framework.FinalizerField(framework.PodGroupProtectionFinalizer)...)
	gomega.Expect(senders).To(gomega.ContainElement(gomega.BeElementOf(creators)),
		"the %s finalizer of PodGroup %s is owned by %v, not by its creator %v: the controller's create did not carry it, the PodGroupProtection admission plugin added it (an addition no manager owns); managedFields:\n%s",
		framework.PodGroupProtectionFinalizer, pg.Name, senders, creators, fields)
}

// waitForRollout waits until the StatefulSet's rolling update is complete:
// every one of want pods is Running and Ready at the update revision.
func waitForRollout(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet, want int) {
	type rollout struct {
		Done   bool
		Detail string
	}
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) (rollout, error) {
		s, err := f.ClientSet.AppsV1().StatefulSets(f.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		if err != nil {
			return rollout{}, err
		}
		pods, err := framework.ListPods(ctx, apps.Pods(f, apps.StatefulSet(set)))
		if err != nil {
			return rollout{}, err
		}
		st := s.Status
		r := rollout{Done: st.ObservedGeneration >= s.Generation && st.UpdateRevision != "" && st.CurrentRevision == st.UpdateRevision &&
			st.UpdatedReplicas == int32(want) && st.ReadyReplicas == int32(want) && len(pods) == want}
		r.Detail = "update revision " + st.UpdateRevision + ", current " + st.CurrentRevision + "; pods:"
		for _, p := range pods {
			ok := p.Labels[appsv1.ControllerRevisionHashLabelKey] == st.UpdateRevision && p.DeletionTimestamp == nil &&
				p.Status.Phase == corev1.PodRunning && podReady(&p)
			r.Done = r.Done && ok
			r.Detail += " " + p.Name + "@" + p.Labels[appsv1.ControllerRevisionHashLabelKey] + "(" + string(p.Status.Phase) + ")"
		}
		return r, nil
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.HaveField("Done", true),
		"waiting for the rolling update of %s to replace all %d pods", set.Name, want)
}
