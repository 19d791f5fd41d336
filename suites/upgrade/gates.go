package upgrade

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
)

// The KEPs put each gate on two sides: the apiserver (here the reference
// webhook, was-webhook) validates spec.scheduling, and the controller manager
// (was-controller-manager) compiles it. These specs turn one side off and on
// again on a live cluster, with live workloads, and restore the cluster after.

var _ = ginkgo.Describe("WorkloadWithDeployment toggled on a live cluster", framework.KEP(6276),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment), framework.Serial, framework.Disruptive, func() {
		f := framework.New("deploy-gate")

		ginkgo.It("rejects new spec.scheduling with the admission side off, and leaves other Deployments alone", framework.ID("D-P1"), func(ctx context.Context) {
			lc := framework.RequireLocalCluster()
			admitted := deploymentApp(createDeployment(ctx, f, "admitted", 2, gangDeployment()))
			waitForState(ctx, f, admitted, "a gang of 2", grouped(2, 2))

			framework.Reconfigure(ctx, framework.ReconfigureInput{Cluster: lc,
				Changes: framework.GateOn(framework.WorkloadWithDeployment, false, framework.ReferenceWebhook)})

			ginkgo.By("a new Deployment with spec.scheduling is rejected, naming the gate")
			_, err := tryCreateDeployment(ctx, f, "rejected", 2, gangDeployment())
			gomega.Expect(err).To(gomega.HaveOccurred(), "a Deployment with spec.scheduling was admitted with WorkloadWithDeployment off")
			gomega.Expect(err.Error()).To(gomega.And(gomega.ContainSubstring("spec.scheduling"), gomega.ContainSubstring(string(framework.WorkloadWithDeployment))))

			ginkgo.By("a Deployment without spec.scheduling is unaffected")
			plain := deploymentApp(createDeployment(ctx, f, "plain", 2, nil))
			waitForState(ctx, f, plain, "2 ordinary pods", ungroupedOnly(2))

			ginkgo.By("the stored spec.scheduling of an admitted Deployment ratchets: scaling it is accepted and still compiled")
			scaleDeployment(ctx, f, admitted.Name, 3)
			waitForState(ctx, f, admitted, "a gang of 3", grouped(3, 3))
		})

		ginkgo.It("stops reconciling with the controller side off, then discovers, reuses and completes the objects when it is back", framework.ID("D-P2", "D-P3"), func(ctx context.Context) {
			lc := framework.RequireLocalCluster()
			history := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource)

			ginkgo.By("with the gate on: a running gang, and a Deployment at zero replicas (a Workload, no PodGroup: a partial set)")
			live := deploymentApp(createDeployment(ctx, f, "live", 3, gangDeployment()))
			before := waitForState(ctx, f, live, "a gang of 3", grouped(3, 3))
			partial := deploymentApp(createDeployment(ctx, f, "partial", 0, gangDeployment()))
			partialBefore := waitForState(ctx, f, partial, "a Workload and no PodGroup", gomega.SatisfyAll(
				gomega.HaveField("Workloads", gomega.HaveLen(1)), gomega.HaveField("PodGroups", gomega.BeEmpty())))
			doomed := deploymentApp(createDeployment(ctx, f, "doomed", 2, gangDeployment()))
			waitForState(ctx, f, doomed, "a gang of 2", grouped(2, 2))

			framework.Reconfigure(ctx, framework.ReconfigureInput{Cluster: lc,
				Changes: framework.GateOn(framework.WorkloadWithDeployment, false, framework.ReferenceControllerManager)})

			ginkgo.By("gate off: scaling changes no minCount and creates no PodGroup; new pods carry no schedulingGroup")
			scaleDeployment(ctx, f, live.Name, 4)
			scaleDeployment(ctx, f, partial.Name, 2)
			mixed := waitForState(ctx, f, live, "3 grouped pods and 1 ungrouped, all bound", gomega.SatisfyAll(
				gomega.HaveField("Pods", gomega.HaveLen(4)),
				gomega.WithTransform(func(s appState) int { return s.bound() }, gomega.Equal(4)),
				gomega.WithTransform(func(s appState) int { return len(s.ungrouped()) }, gomega.Equal(1))))
			keepsState(ctx, f, live, "its Workload and PodGroup at minCount 3", gomega.SatisfyAll(
				gomega.HaveField("Workloads", gomega.ConsistOf(gomega.HaveField("MinCount", int32(3)))),
				gomega.HaveField("PodGroups", gomega.ConsistOf(gomega.HaveField("MinCount", int32(3))))))
			sameObjects(readState(ctx, f, live), before)
			podsUndisturbed(mixed, before)
			partialOff := waitForState(ctx, f, partial, "2 bound ungrouped pods and still no PodGroup", gomega.SatisfyAll(
				gomega.HaveField("Workloads", gomega.HaveLen(1)), gomega.HaveField("PodGroups", gomega.BeEmpty()),
				gomega.WithTransform(func(s appState) int { return s.bound() }, gomega.Equal(2)),
				gomega.WithTransform(func(s appState) int { return len(s.ungrouped()) }, gomega.Equal(2))))

			ginkgo.By("gate off: a new Deployment with spec.scheduling gets no Workload")
			late := deploymentApp(createDeployment(ctx, f, "late", 2, gangDeployment()))
			waitForState(ctx, f, late, "2 ordinary pods", ungroupedOnly(2))
			keepsState(ctx, f, late, "no Workload or PodGroup", gomega.And(
				gomega.HaveField("Workloads", gomega.BeEmpty()), gomega.HaveField("PodGroups", gomega.BeEmpty())))

			ginkgo.By("gate off: deleting an owner still removes its Workload and PodGroup (garbage collection, no controller)")
			// Foreground: with background deletion the 1.37 podgroup-protection
			// finalizer and the pods' PodGroup ownerReference wait on each other
			// (README, "Background deletion"); the reference implementation's
			// cascade finisher that resolves it is part of the gated controller.
			gomega.Expect(f.ClientSet.AppsV1().Deployments(f.Namespace).Delete(ctx, doomed.Name,
				metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})).To(gomega.Succeed())
			waitForState(ctx, f, doomed, "its Workload, PodGroup and pods gone", gomega.SatisfyAll(
				gomega.HaveField("Workloads", gomega.BeEmpty()), gomega.HaveField("PodGroups", gomega.BeEmpty()), gomega.HaveField("Pods", gomega.BeEmpty())))

			framework.Reconfigure(ctx, framework.ReconfigureInput{Cluster: lc, KeepAfterSpec: true,
				Changes: framework.GateOn(framework.WorkloadWithDeployment, true, framework.ReferenceControllerManager)})

			ginkgo.By("gate on again: the live gang's objects are reused and re-synced to 4; the ungrouped pod stays ungrouped (mixed-pod caveat)")
			after := waitForState(ctx, f, live, "minCount 4 on the same objects", gomega.SatisfyAll(
				gomega.HaveField("Workloads", gomega.ConsistOf(gomega.HaveField("MinCount", int32(4)))),
				gomega.HaveField("PodGroups", gomega.ConsistOf(gomega.HaveField("MinCount", int32(4))))))
			sameObjects(after, before)
			podsUndisturbed(after, mixed)
			gomega.Expect(after.ungrouped()).To(gomega.HaveLen(1), "pods are immutable: the pod made while the gate was off keeps no schedulingGroup: %s", after)

			ginkgo.By("gate on again: the partial set is completed with the missing PodGroup, reusing the Workload")
			partialAfter := waitForState(ctx, f, partial, "one PodGroup at minCount 2", gomega.SatisfyAll(
				gomega.HaveField("Workloads", gomega.ConsistOf(gomega.HaveField("MinCount", int32(2)))),
				gomega.HaveField("PodGroups", gomega.ConsistOf(gomega.HaveField("MinCount", int32(2))))))
			gomega.Expect(partialAfter.Workloads[0].UID).To(gomega.Equal(partialBefore.Workloads[0].UID), "the partial set's Workload was recreated")
			podsUndisturbed(partialAfter, partialOff)

			ginkgo.By("gate on again: the Deployment created while off resumes compilation on its next sync")
			waitForState(ctx, f, late, "a Workload and a PodGroup", gomega.SatisfyAll(
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
				lc := framework.RequireLocalCluster()
				history := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource)

				ginkgo.By("gate on: Parallel+Gang and OrderedReady+Basic StatefulSets both get a Workload and a PodGroup (S-P2)")
				g := statefulSetApp(createStatefulSet(ctx, f, "gang", 3, true, gangStatefulSet()))
				before := waitForState(ctx, f, g, "a gang of 3", grouped(3, 3))
				b := statefulSetApp(createStatefulSet(ctx, f, "basic", 2, false, basicStatefulSet()))
				basicBefore := waitForState(ctx, f, b, "a basic group of 2", grouped(0, 2))

				framework.Reconfigure(ctx, framework.ReconfigureInput{Cluster: lc,
					Changes: framework.GateOn(framework.WorkloadWithStatefulSet, false, framework.ReferenceControllerManager)})

				ginkgo.By("gate off: running pods are untouched (S-P5)")
				podsUndisturbed(readState(ctx, f, g), before)
				podsUndisturbed(readState(ctx, f, b), basicBefore)

				ginkgo.By("gate off: scaling 3 -> 5 leaves the Workload and PodGroup at minCount 3; new pods schedule outside the group (S-P4)")
				scaleStatefulSet(ctx, f, g.Name, 5)
				off := waitForState(ctx, f, g, "5 bound pods, 2 of them ungrouped", gomega.SatisfyAll(
					gomega.HaveField("Pods", gomega.HaveLen(5)),
					gomega.WithTransform(func(s appState) int { return s.bound() }, gomega.Equal(5)),
					gomega.WithTransform(func(s appState) int { return len(s.ungrouped()) }, gomega.Equal(2))))
				keepsState(ctx, f, g, "its Workload and PodGroup at minCount 3 (the documented desynchronisation)", gomega.SatisfyAll(
					gomega.HaveField("Workloads", gomega.ConsistOf(gomega.HaveField("MinCount", int32(3)))),
					gomega.HaveField("PodGroups", gomega.ConsistOf(gomega.HaveField("MinCount", int32(3))))))
				podsUndisturbed(off, before)
				// The PodGroup stays in force for the pods that name it: the
				// scheduler keeps it InitiallyScheduled, it is not inert.
				framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{
					ClientSet: f.ClientSet, Namespace: f.Namespace, Name: before.PodGroups[0].Name,
					Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue,
				})

				ginkgo.By("gate off: a new gang StatefulSet gets no Workload or PodGroup and runs as upstream (S-P1, S-E12)")
				late := statefulSetApp(createStatefulSet(ctx, f, "late", 2, true, gangStatefulSet()))
				waitForState(ctx, f, late, "2 ordinary pods", ungroupedOnly(2))

				framework.Reconfigure(ctx, framework.ReconfigureInput{Cluster: lc, KeepAfterSpec: true,
					Changes: framework.GateOn(framework.WorkloadWithStatefulSet, true, framework.ReferenceControllerManager)})

				ginkgo.By("gate on again: the same Workload and PodGroup are discovered by reference and re-synced to 5 (S-P3)")
				after := waitForState(ctx, f, g, "minCount 5 on the same objects", gomega.SatisfyAll(
					gomega.HaveField("Workloads", gomega.ConsistOf(gomega.HaveField("MinCount", int32(5)))),
					gomega.HaveField("PodGroups", gomega.ConsistOf(gomega.HaveField("MinCount", int32(5))))))
				sameObjects(after, before)
				podsUndisturbed(after, off)
				sameObjects(readState(ctx, f, b), basicBefore)

				ginkgo.By("gate on again: a StatefulSet that already has pods gets no objects (KEP-6277 creates them only before the first pod); a new one does (S-E12)")
				keepsState(ctx, f, late, "no Workload or PodGroup", gomega.And(
					gomega.HaveField("Workloads", gomega.BeEmpty()), gomega.HaveField("PodGroups", gomega.BeEmpty())))
				fresh := statefulSetApp(createStatefulSet(ctx, f, "fresh", 2, true, gangStatefulSet()))
				waitForState(ctx, f, fresh, "a gang of 2", grouped(2, 2))

				// gang, basic and fresh: one Workload and one PodGroup each, ever.
				expectCreations(history, 3, 3)
			})
	})
