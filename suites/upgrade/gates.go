package upgrade

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
)

// The KEPs put each gate on two sides: the apiserver (here the reference
// webhook, was-webhook) validates spec.scheduling, and the controller manager
// (was-controller-manager) compiles it. These specs turn one side off and on
// again on a live cluster, with live workloads, and restore the cluster after.

var _ = ginkgo.Describe("WorkloadWithDeployment toggled on a live cluster", framework.KEP(6276),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment), framework.Serial, framework.Disruptive, func() {
		f := framework.New("deploy-gate")

		ginkgo.It("rejects new spec.scheduling with the admission side off, and leaves other Deployments alone", framework.ID("D-P1"), func(ctx context.Context) {
			framework.RequireReconfigure()
			admitted := apps.Deployment(createDeployment(ctx, f, "admitted", 2, gangDeployment()))
			apps.WaitForGang(ctx, f, admitted, 2, 2)

			framework.Reconfigure(ctx, framework.ReconfigureInput{
				Changes: framework.GateOn(framework.WorkloadWithDeployment, false, framework.ReferenceWebhook)})

			// KEP-6276: "When WorkloadWithDeployment is disabled, requests that
			// set spec.scheduling are rejected", by the marker
			// +k8s:ifDisabled(WorkloadWithDeployment)=+k8s:forbidden, which
			// upstream yields field.Forbidden(spec.scheduling, ""): the path and
			// the type are the contract, no wording (not the gate's name). Its
			// PRR says the same ("new requests that set spec.scheduling are
			// rejected"), so there is no "clears on create" reading here.
			ginkgo.By("a new Deployment with spec.scheduling is rejected: Forbidden at spec.scheduling")
			_, err := tryCreateDeployment(ctx, f, "rejected", 2, gangDeployment())
			framework.ExpectRejected(err, framework.Rejection{Paths: []string{"spec.scheduling"},
				Types: []field.ErrorType{field.ErrorTypeForbidden}, Annotation: framework.Intent.DeploymentAnnotation()})

			ginkgo.By("a Deployment without spec.scheduling is unaffected")
			plain := apps.Deployment(createDeployment(ctx, f, "plain", 2, nil))
			apps.WaitForUngrouped(ctx, f, plain, 2)

			ginkgo.By("the stored spec.scheduling of an admitted Deployment ratchets: scaling it is accepted and still compiled")
			apps.Scale(ctx, f, admitted, 3)
			apps.WaitForGang(ctx, f, admitted, 3, 3)
		})

		ginkgo.It("stops reconciling with the controller side off, then discovers, reuses and completes the objects when it is back", framework.ID("D-P2", "D-P3"), func(ctx context.Context) {
			framework.RequireReconfigure()
			history := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource)

			ginkgo.By("with the gate on: a running gang, and a Deployment at zero replicas (a Workload, no PodGroup: a partial set)")
			live := apps.Deployment(createDeployment(ctx, f, "live", 3, gangDeployment()))
			before := apps.WaitForGang(ctx, f, live, 3, 3)
			partial := apps.Deployment(createDeployment(ctx, f, "partial", 0, gangDeployment()))
			partialBefore := apps.WaitForState(ctx, f, partial, "a Workload and no PodGroup", gomega.SatisfyAll(
				gomega.HaveField("Workloads", gomega.HaveLen(1)), gomega.HaveField("PodGroups", gomega.BeEmpty())))
			doomed := apps.Deployment(createDeployment(ctx, f, "doomed", 2, gangDeployment()))
			apps.WaitForGang(ctx, f, doomed, 2, 2)

			framework.Reconfigure(ctx, framework.ReconfigureInput{
				Changes: framework.GateOn(framework.WorkloadWithDeployment, false, framework.ReferenceControllerManager)})

			ginkgo.By("gate off: scaling changes no minCount and creates no PodGroup; new pods carry no schedulingGroup")
			apps.Scale(ctx, f, live, 4)
			apps.Scale(ctx, f, partial, 2)
			mixed := apps.WaitForState(ctx, f, live, "3 grouped pods and 1 ungrouped, all bound", apps.Mixed(4, 1))
			apps.KeepsState(ctx, f, live, "its Workload and PodGroup at minCount 3", apps.AtMinCount(3))
			apps.ExpectSameObjects(apps.Read(ctx, f, live), before)
			apps.ExpectPodsUndisturbed(mixed, before)
			partialOff := apps.WaitForState(ctx, f, partial, "2 bound ungrouped pods and still no PodGroup", gomega.SatisfyAll(
				gomega.HaveField("Workloads", gomega.HaveLen(1)), gomega.HaveField("PodGroups", gomega.BeEmpty()),
				gomega.WithTransform(func(s apps.State) int { return s.Bound() }, gomega.Equal(2)),
				gomega.WithTransform(func(s apps.State) int { return len(s.Ungrouped()) }, gomega.Equal(2))))

			ginkgo.By("gate off: a new Deployment with spec.scheduling gets no Workload")
			late := apps.Deployment(createDeployment(ctx, f, "late", 2, gangDeployment()))
			apps.WaitForUngrouped(ctx, f, late, 2)
			apps.KeepsState(ctx, f, late, "no Workload or PodGroup", gomega.And(
				gomega.HaveField("Workloads", gomega.BeEmpty()), gomega.HaveField("PodGroups", gomega.BeEmpty())))

			ginkgo.By("gate off: deleting an owner still removes its Workload and PodGroup (garbage collection, no controller)")
			// Foreground: with background deletion the 1.37 podgroup-protection
			// finalizer and the pods' PodGroup ownerReference wait on each other
			// (README, "Background deletion"); the reference implementation's
			// cascade finisher that resolves it is part of the gated controller.
			gomega.Expect(f.ClientSet.AppsV1().Deployments(f.Namespace).Delete(ctx, doomed.Name,
				metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})).To(gomega.Succeed())
			apps.WaitForState(ctx, f, doomed, "its Workload, PodGroup and pods gone", gomega.SatisfyAll(
				gomega.HaveField("Workloads", gomega.BeEmpty()), gomega.HaveField("PodGroups", gomega.BeEmpty()), gomega.HaveField("Pods", gomega.BeEmpty())))

			framework.Reconfigure(ctx, framework.ReconfigureInput{KeepAfterSpec: true,
				Changes: framework.GateOn(framework.WorkloadWithDeployment, true, framework.ReferenceControllerManager)})

			ginkgo.By("gate on again: the live gang's objects are reused and re-synced to 4; the ungrouped pod stays ungrouped (mixed-pod caveat)")
			after := apps.WaitForState(ctx, f, live, "minCount 4 on the same objects", apps.AtMinCount(4))
			apps.ExpectSameObjects(after, before)
			apps.ExpectPodsUndisturbed(after, mixed)
			gomega.Expect(after.Ungrouped()).To(gomega.HaveLen(1), "pods are immutable: the pod made while the gate was off keeps no schedulingGroup: %s", after)

			ginkgo.By("gate on again: the partial set is completed with the missing PodGroup, reusing the Workload")
			partialAfter := apps.WaitForState(ctx, f, partial, "one PodGroup at minCount 2", apps.AtMinCount(2))
			gomega.Expect(partialAfter.Workloads[0].UID).To(gomega.Equal(partialBefore.Workloads[0].UID), "the partial set's Workload was recreated")
			apps.ExpectPodsUndisturbed(partialAfter, partialOff)

			ginkgo.By("gate on again: the Deployment created while off resumes compilation on its next sync")
			apps.WaitForState(ctx, f, late, "a Workload and a PodGroup", gomega.SatisfyAll(
				gomega.HaveField("Workloads", gomega.HaveLen(1)), gomega.HaveField("PodGroups", gomega.HaveLen(1))))

			// live, partial, doomed and late: one Workload each, ever; PodGroups:
			// live, doomed (before), partial and late (after).
			expectCreations(history, 4, 4)
		})
	})

var _ = ginkgo.Describe("WorkloadWithStatefulSet toggled on a live cluster", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), framework.Serial, framework.Disruptive, func() {
		f := framework.New("sts-gate-toggle")

		ginkgo.It("keeps running pods and objects while the controller side is off, desynchronises minCount, and reuses the objects when it is back",
			framework.ID("S-P1", "S-P2", "S-P3", "S-P4", "S-P5", "S-E12"), func(ctx context.Context) {
				framework.RequireReconfigure()
				history := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource)

				ginkgo.By("gate on: Parallel+Gang and OrderedReady+Basic StatefulSets both get a Workload and a PodGroup (S-P2)")
				g := apps.StatefulSet(createStatefulSet(ctx, f, "gang", 3, true, gangStatefulSet()))
				before := apps.WaitForGang(ctx, f, g, 3, 3)
				b := apps.StatefulSet(createStatefulSet(ctx, f, "basic", 2, false, basicStatefulSet()))
				basicBefore := apps.WaitForGang(ctx, f, b, 0, 2)

				framework.Reconfigure(ctx, framework.ReconfigureInput{
					Changes: framework.GateOn(framework.WorkloadWithStatefulSet, false, framework.ReferenceControllerManager)})

				ginkgo.By("gate off: running pods are untouched (S-P5)")
				apps.ExpectPodsUndisturbed(apps.Read(ctx, f, g), before)
				apps.ExpectPodsUndisturbed(apps.Read(ctx, f, b), basicBefore)

				ginkgo.By("gate off: scaling 3 -> 5 leaves the Workload and PodGroup at minCount 3; new pods schedule outside the group (S-P4)")
				apps.Scale(ctx, f, g, 5)
				off := apps.WaitForState(ctx, f, g, "5 bound pods, 2 of them ungrouped", apps.Mixed(5, 2))
				apps.KeepsState(ctx, f, g, "its Workload and PodGroup at minCount 3 (the documented desynchronisation)", apps.AtMinCount(3))
				apps.ExpectPodsUndisturbed(off, before)
				// The PodGroup stays in force for the pods that name it: the
				// scheduler keeps it InitiallyScheduled, it is not inert.
				framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{
					ClientSet: f.ClientSet, Namespace: f.Namespace, Name: before.PodGroups[0].Name,
					Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue,
				})

				ginkgo.By("gate off: a new gang StatefulSet gets no Workload or PodGroup and runs as upstream (S-P1, S-E12)")
				late := apps.StatefulSet(createStatefulSet(ctx, f, "late", 2, true, gangStatefulSet()))
				apps.WaitForUngrouped(ctx, f, late, 2)

				framework.Reconfigure(ctx, framework.ReconfigureInput{KeepAfterSpec: true,
					Changes: framework.GateOn(framework.WorkloadWithStatefulSet, true, framework.ReferenceControllerManager)})

				ginkgo.By("gate on again: the same Workload and PodGroup are discovered by reference and re-synced to 5 (S-P3)")
				after := apps.WaitForState(ctx, f, g, "minCount 5 on the same objects", apps.AtMinCount(5))
				apps.ExpectSameObjects(after, before)
				apps.ExpectPodsUndisturbed(after, off)
				apps.ExpectSameObjects(apps.Read(ctx, f, b), basicBefore)

				ginkgo.By("gate on again: a StatefulSet that already has pods gets no objects (KEP-6277 creates them only before the first pod); a new one does (S-E12)")
				apps.KeepsState(ctx, f, late, "no Workload or PodGroup", gomega.And(
					gomega.HaveField("Workloads", gomega.BeEmpty()), gomega.HaveField("PodGroups", gomega.BeEmpty())))
				fresh := apps.StatefulSet(createStatefulSet(ctx, f, "fresh", 2, true, gangStatefulSet()))
				apps.WaitForGang(ctx, f, fresh, 2, 2)

				// gang, basic and fresh: one Workload and one PodGroup each, ever.
				expectCreations(history, 3, 3)
			})
	})
