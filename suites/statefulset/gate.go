package statefulset

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
)

var _ = ginkgo.Describe("StatefulSets with the WorkloadWithStatefulSet gate off", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("sts-gate")

		// The controller side off: a StatefulSet that carries intent
		// (admitted while the apiserver side's gate is on) must behave exactly
		// as upstream. Then the apiserver side off too: a new StatefulSet that
		// sets spec.scheduling is either rejected (KEP-6277's marker,
		// +k8s:ifDisabled(WorkloadWithStatefulSet)=+k8s:forbidden) or admitted
		// with it cleared (its PRR: "kube-apiserver: Clears spec.scheduling on
		// new creates"); either way nothing is created for it. The reading
		// taken is recorded for the report.
		ginkgo.It("creates no Workload or PodGroup when the gate is off, and runs the pods as usual", framework.ID("S-I11"),
			framework.Serial, framework.Disruptive, func(ctx context.Context) {
				framework.RequireReconfigure()
				framework.Reconfigure(ctx, framework.ReconfigureInput{
					Changes: framework.GateOn(framework.WorkloadWithStatefulSet, false, framework.ReferenceControllerManager),
				})

				set := create(ctx, parallel(f, "gate-off", 3, "100m").Obj(), gang())
				apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 3)
				apps.Scale(ctx, f, apps.StatefulSet(set), 4)
				apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 4)
				expectStandard(ctx, f, set.Name)

				ginkgo.By("the apiserver side off too: a new StatefulSet with spec.scheduling")
				framework.Reconfigure(ctx, framework.ReconfigureInput{
					Changes: framework.GateOn(framework.WorkloadWithStatefulSet, false, framework.ReferenceWebhook),
				})
				late := parallel(f, "created-gate-off", 2, "100m").Obj()
				_, err := framework.Intent.CreateStatefulSet(ctx, late, gang())
				reading := framework.ExpectGateOff(framework.GateOffCreate{Err: err, Annotation: framework.Intent.StatefulSetAnnotation(), ClearsAllowed: true,
					Stored: func() (bool, error) {
						cfg, err := framework.Intent.StatefulSetScheduling(ctx, f.Namespace, late.Name)
						return cfg != nil, err
					}})
				if reading == framework.ReadingClears {
					apps.WaitForUngrouped(ctx, f, apps.App{Kind: "StatefulSet", Name: late.Name}, 2)
				}

				gomega.Consistently(ctx, func(ctx context.Context) string {
					return fmt.Sprintf("workloads=%d podgroups=%d", len(workloadsIn(ctx, f)), len(apps.ListPodGroups(ctx, f)))
				}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal("workloads=0 podgroups=0"),
					"with the gate off a StatefulSet gets no Workload or PodGroup")
				expectStandard(ctx, f, set.Name)
				if reading == framework.ReadingClears {
					expectStandard(ctx, f, late.Name)
				}
			})
	})

// expectStandard asserts the StatefulSet's pods are upstream's: no
// schedulingGroup, and no owner but their StatefulSet.
func expectStandard(ctx context.Context, f *framework.Framework, name string) {
	ginkgo.GinkgoHelper()
	set, err := f.ClientSet.AppsV1().StatefulSets(f.Namespace).Get(ctx, name, metav1.GetOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	pods, err := framework.ListPods(ctx, apps.Pods(f, apps.StatefulSet(set)))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	for _, p := range pods {
		gomega.Expect(p.Spec.SchedulingGroup).To(gomega.BeNil(), "pod %s", p.Name)
		gomega.Expect(p.OwnerReferences).To(gomega.HaveLen(1), "pod %s has owners beyond its StatefulSet: %v", p.Name, p.OwnerReferences)
		apps.ExpectOwner(p.OwnerReferences, apps.OwnerStatefulSet(set), true)
	}
}

// workloadsIn lists the namespace's Workloads, whoever they belong to.
func workloadsIn(ctx context.Context, f *framework.Framework) []schedulingv1beta1.Workload {
	ginkgo.GinkgoHelper()
	list, err := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).List(ctx, metav1.ListOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return list.Items
}
