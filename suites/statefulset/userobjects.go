package statefulset

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// KEP-6277, Controller Workflow: "If the Workload was created by another
// actor — a user pre-creating one, or a parent controller — the StatefulSet
// controller respects and uses it, adds no ownerReference, never mutates it,
// and never deletes it"; "If more than one is found, treat it as ambiguous:
// create nothing, mutate nothing, and surface an event"; a Workload whose
// podGroupTemplates count is not 1 is ignored, with an event; discovery is
// "by reference, not by name and not by ownership".

var _ = ginkgo.Describe("StatefulSets with Workloads and PodGroups they did not create", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("sts-byo")

		ginkgo.It("uses a user's Workload as-is: never adopted, changed or deleted; the PodGroup it creates follows the user's template, not spec.replicas",
			framework.ID("S-U15", "S-U16", "S-U11"), func(ctx context.Context) {
				// Any name: the controller must find it by spec.controllerRef.
				byo := createWorkload(ctx, f, userWorkload(f, "chosen-by-the-user", "byo", "members", 2))
				set := create(ctx, parallel(f, "byo", 3, "100m").Obj(), gang())
				a := apps.StatefulSet(set)
				apps.WaitForRunning(ctx, f, a, 3)

				ginkgo.By("the PodGroup is instantiated from the user's template with its minCount 2, not replicas 3; no Workload of its own")
				pg := apps.ThePodGroup(ctx, f, byo)
				gomega.Expect(pg.Spec.WorkloadRef).To(gomega.HaveValue(gomega.Equal(schedulingv1beta1.WorkloadReference{WorkloadName: byo.Name, TemplateName: "members"})))
				apps.ExpectOwner(pg.OwnerReferences, apps.OwnerStatefulSet(set), true)
				apps.ExpectPodsInGroup(ctx, f, a, apps.OwnerStatefulSet(set), &pg, 3)
				gomega.Expect(apps.Read(ctx, f, a)).To(apps.MinCounts(2, 2), "the PodGroup's minCount comes from the user's template")
				expectNoOtherWorkload(ctx, f, byo)
				expectWorkloadUntouched(ctx, f, byo)

				ginkgo.By("scaling up to 4: the user's Workload is not written; the PodGroup keeps the template's minCount")
				apps.Scale(ctx, f, a, 4)
				apps.WaitForRunning(ctx, f, a, 4)
				apps.ExpectPodsInGroup(ctx, f, a, apps.OwnerStatefulSet(set), &pg, 4)
				gomega.Expect(apps.Read(ctx, f, a)).To(apps.MinCounts(2, 2))
				expectWorkloadUntouched(ctx, f, byo)

				ginkgo.By("the user raises the template's minCount to 4, then scales to 5: the PodGroup follows the template (4), not replicas (5)")
				byo = setTemplateMinCount(ctx, f, byo.Name, 4)
				apps.Scale(ctx, f, a, 5)
				apps.WaitForRunning(ctx, f, a, 5)
				gomega.Expect(apps.Read(ctx, f, a)).To(apps.MinCounts(4, 4), "the PodGroup must carry the template's minCount 4, not spec.replicas 5")
				expectWorkloadUntouched(ctx, f, byo)

				ginkgo.By("scaling down to 2: the controller never lowers the user's template, so the PodGroup keeps 4")
				apps.Scale(ctx, f, a, 2)
				apps.WaitForRunning(ctx, f, a, 2)
				gomega.Expect(apps.Read(ctx, f, a)).To(apps.MinCounts(4, 4))
				expectWorkloadUntouched(ctx, f, byo)

				ginkgo.By("deleting the StatefulSet: its PodGroup and pods go, the user's Workload stays as it was")
				deleteStatefulSet(ctx, f, set, true, &pg)
				apps.KeepsState(ctx, f, a, "the user's Workload, unchanged", gomega.HaveField("Workloads", gomega.ConsistOf(gomega.HaveField("UID", byo.UID))))
				expectWorkloadUntouched(ctx, f, byo)
			})

		// KEP-6277, Scale Lifecycle: "A PodGroup supplied by another actor is
		// never mutated either", though a PodGroup the controller created
		// "syncs the PodGroup's minCount from that template". The user's
		// PodGroup therefore has a minCount (1) that no sync would write: not
		// its template's (2), nor any spec.replicas the spec goes through (3,
		// 4, 2). So a controller that syncs it, from either, changes its spec.
		ginkgo.It("uses a user's PodGroup as-is: its pods join it, and scaling and deletion change neither it nor the user's Workload",
			framework.ID("S-U15", "S-U17", "S-U11"), func(ctx context.Context) {
				byo := createWorkload(ctx, f, userWorkload(f, "users-workload", "own-group", "members", 2))
				userPG := createPodGroup(ctx, f, builder.PodGroup("users-group", f.Namespace).WorkloadRef(byo.Name, "members").Gang(1).Obj())
				set := create(ctx, parallel(f, "own-group", 3, "100m").Obj(), gang())
				a := apps.StatefulSet(set)
				apps.WaitForRunning(ctx, f, a, 3)
				apps.ExpectPodsInGroup(ctx, f, a, apps.OwnerStatefulSet(set), userPG, 3)
				gomega.Expect(apps.Names(apps.ListPodGroups(ctx, f))).To(gomega.ConsistOf("users-group"), "no PodGroup of its own")
				expectNoOtherWorkload(ctx, f, byo)
				expectPodGroupUntouched(ctx, f, userPG)
				expectWorkloadUntouched(ctx, f, byo)

				ginkgo.By("scaling up to 4 and down to 2: neither object is written")
				apps.Scale(ctx, f, a, 4)
				apps.WaitForRunning(ctx, f, a, 4)
				apps.ExpectPodsInGroup(ctx, f, a, apps.OwnerStatefulSet(set), userPG, 4)
				expectPodGroupUntouched(ctx, f, userPG)
				expectWorkloadUntouched(ctx, f, byo)
				apps.Scale(ctx, f, a, 2)
				apps.WaitForRunning(ctx, f, a, 2)
				expectPodGroupUntouched(ctx, f, userPG)
				expectWorkloadUntouched(ctx, f, byo)

				ginkgo.By("deleting the StatefulSet: the user's PodGroup and Workload stay as they were")
				// Garbage collection deletes a pod only once it has no owner
				// left: the pods' ownerReference to the user's PodGroup keeps
				// them, unlinked from the StatefulSet (the KEP says nothing of
				// this case).
				if kept := deleteStatefulSet(ctx, f, set, false); len(kept) > 0 {
					logf("pods kept by their ownerReference to the user's PodGroup after the StatefulSet is gone: %v", kept)
				}
				gomega.Consistently(ctx, func(ctx context.Context) []string {
					return apps.Names(apps.ListPodGroups(ctx, f))
				}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.ConsistOf("users-group"),
					"the user's PodGroup must survive its StatefulSet")
				expectPodGroupUntouched(ctx, f, userPG)
				expectWorkloadUntouched(ctx, f, byo)
			})
		ginkgo.It("treats two Workloads that reference one StatefulSet as ambiguous: nothing created, nothing changed, an event", framework.ID("S-U14"), func(ctx context.Context) {
			first := createWorkload(ctx, f, userWorkload(f, "ambiguous-first", "ambiguous", "members", 3))
			second := createWorkload(ctx, f, userWorkload(f, "ambiguous-second", "ambiguous", "members", 3))
			set := create(ctx, parallel(f, "ambiguous", 3, "100m").Obj(), gang())
			a := apps.StatefulSet(set)
			// KEP-6277: "If more than one is found, treat it as ambiguous:
			// create nothing, mutate nothing, and surface an event." It names
			// no reason: the event must name one of the two Workloads.
			event := apps.WaitForWarning(ctx, f, a, apps.Warning{Why: "two Workloads name it in spec.controllerRef",
				Names: []string{first.Name, second.Name}}, nil)
			logf("event %s: %s", event.Reason, event.Message)
			expectNothingCreated(ctx, f, first, second)
			expectWorkloadUntouched(ctx, f, first)
			expectWorkloadUntouched(ctx, f, second)
		})

		ginkgo.It("ignores a user's Workload whose podGroupTemplates count is not 1: nothing created, nothing changed, an event", framework.ID("S-U18"), func(ctx context.Context) {
			odd := userWorkload(f, "two-templates", "odd", "members", 3)
			odd.Spec.PodGroupTemplates = append(odd.Spec.PodGroupTemplates, builder.PodGroupTemplate("others").Gang(1).Obj())
			odd = createWorkload(ctx, f, odd)
			set := create(ctx, parallel(f, "odd", 3, "100m").Obj(), gang())
			a := apps.StatefulSet(set)
			// KEP-6277: "It falls back (ignoring the discovered objects and
			// raising an event) when the discovered Workload has a shape it
			// cannot use — for Alpha, when its podGroupTemplates count is not
			// 1." It names no reason: the event must name the Workload.
			event := apps.WaitForWarning(ctx, f, a, apps.Warning{Why: "its Workload has 2 podGroupTemplates, which it cannot use",
				Names: []string{odd.Name}}, nil)
			logf("event %s: %s", event.Reason, event.Message)
			expectNothingCreated(ctx, f, odd)
			expectWorkloadUntouched(ctx, f, odd)
		})

		// The names an implementation gives its objects are learned from the
		// implementation itself (its own Workload and PodGroup for this very
		// StatefulSet), then taken by decoys that reference nothing of it.
		ginkgo.It("discovers by reference, not by name: decoys carrying the names it chose are neither used nor changed", framework.ID("S-U11"), func(ctx context.Context) {
			set, a, _ := runningGang(ctx, f, "named", 2, "100m")
			w, pg := objectsOf(ctx, f, a)
			template := pg.Spec.WorkloadRef.TemplateName

			ginkgo.By("at zero replicas, deleting its Workload and PodGroup and putting decoys of the same names in their place")
			apps.Scale(ctx, f, a, 0)
			apps.WaitForPodsCreated(ctx, f, a, 0)
			// The pods being gone is not the end of the scale-down: the
			// StatefulSet controller then writes status.replicas 0, and an
			// implementation that syncs on that write finds no pods and, its
			// objects deleted, may create them again (KEP-6277: "The
			// controller attempts to create Workload and PodGroup only when
			// the StatefulSet has no pods associated with it yet").
			waitForStatusReplicas(ctx, f, set, 0)
			decoyW, decoyPG := replaceWithDecoys(ctx, f, &w, &pg,
				builder.Workload(w.Name, f.Namespace).PodGroupTemplate(builder.PodGroupTemplate(template).Gang(2)).Obj(),
				builder.PodGroup(pg.Name, f.Namespace).WorkloadRef(w.Name, template).Gang(2).Obj())
			before, err := apps.Events(ctx, f, a)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())

			ginkgo.By("scaling back to 2: whatever the controller does, it must not take the decoys for its own")
			apps.Scale(ctx, f, a, 2)
			awaitReaction(ctx, f, a, 2, before)
			gomega.Consistently(ctx, func(ctx context.Context) []string {
				return podsNaming(ctx, f, a, decoyPG.Name)
			}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.BeEmpty(),
				"a pod joined the decoy PodGroup %s, found by its name", decoyPG.Name)
			expectWorkloadUntouched(ctx, f, decoyW)
			expectPodGroupUntouched(ctx, f, decoyPG)
			// Unchanged is not enough: a controller that found the decoy
			// Workload by its name could use it as-is, stamping a PodGroup of
			// another name from it. KEP-6277 discovers "by reference, not by
			// name": only the decoy PodGroup may name the decoy Workload.
			for _, g := range apps.ListPodGroups(ctx, f) {
				if g.UID == decoyPG.UID {
					continue
				}
				gomega.Expect(g.Spec.WorkloadRef).NotTo(gomega.HaveValue(gomega.HaveField("WorkloadName", decoyW.Name)),
					"PodGroup %s was stamped from the decoy Workload %s, found by its name", g.Name, decoyW.Name)
			}
		})

		ginkgo.It("creates nothing once the StatefulSet has pods, even when its Workload is gone", framework.ID("S-U13"), func(ctx context.Context) {
			_, a, _ := runningGang(ctx, f, "late", 2, "100m")
			w, pg := objectsOf(ctx, f, a)

			ginkgo.By("deleting the Workload, orphaning its PodGroup, while the pods run")
			gomega.Expect(f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).Delete(ctx, w.Name, metav1.DeleteOptions{
				PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)})).To(gomega.Succeed())
			apps.WaitForState(ctx, f, a, "its Workload gone", gomega.HaveField("Workloads", gomega.BeEmpty()))

			ginkgo.By("scaling up to 3: the new pod is made, and no Workload or PodGroup with it")
			apps.Scale(ctx, f, a, 3)
			apps.WaitForRunning(ctx, f, a, 3)
			apps.KeepsState(ctx, f, a, "no Workload", gomega.HaveField("Workloads", gomega.BeEmpty()))
			gomega.Expect(apps.ListPodGroups(ctx, f)).To(gomega.ConsistOf(gomega.HaveField("UID", pg.UID)), "a PodGroup was created although the StatefulSet has pods")
		})
	})
