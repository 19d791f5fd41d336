package statefulset

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
)

var _ = ginkgo.Describe("StatefulSets with the WorkloadWithStatefulSet gate off", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("sts-gate")

		// Admission with the gate off rejects spec.scheduling outright, so
		// only the controller side is turned off: a StatefulSet that carries
		// intent (admitted while the webhook's gate is on) must then behave
		// exactly as upstream.
		ginkgo.It("creates no Workload or PodGroup when the controller's gate is off, and runs the pods as usual", framework.ID("S-I11"),
			framework.Serial, framework.Disruptive, func(ctx context.Context) {
				framework.Reconfigure(ctx, framework.ReconfigureInput{
					Changes: framework.GateOn(framework.WorkloadWithStatefulSet, false, framework.ReferenceControllerManager),
				})

				set := create(ctx, parallel(f, "gate-off", 3, "100m").Obj(), gang())
				apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 3)
				apps.Scale(ctx, f, apps.StatefulSet(set), 4)
				apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 4)
				gomega.Consistently(ctx, func(ctx context.Context) string {
					return fmt.Sprintf("workloads=%d podgroups=%d", len(apps.Workloads(ctx, f, apps.StatefulSet(set))), len(apps.ListPodGroups(ctx, f)))
				}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal("workloads=0 podgroups=0"),
					"with the controller's gate off a StatefulSet gets no Workload or PodGroup")
				pods, err := framework.ListPods(ctx, apps.Pods(f, apps.StatefulSet(set)))
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				for _, p := range pods {
					gomega.Expect(p.Spec.SchedulingGroup).To(gomega.BeNil(), "pod %s", p.Name)
					gomega.Expect(p.OwnerReferences).To(gomega.HaveLen(1), "pod %s has owners beyond its StatefulSet: %v", p.Name, p.OwnerReferences)
					apps.ExpectOwner(p.OwnerReferences, apps.OwnerStatefulSet(set), true)
				}
			})
	})
