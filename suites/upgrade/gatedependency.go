package upgrade

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/workload-aware/apps-harness/api/cluster"
	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// D-P8 and S-P11: the KEP gates depend on GenericWorkload, on the cluster
// under test. KEP-6276, Feature Gate and RBAC: "The Scheduling field is gated
// by WorkloadWithDeployment (Alpha, default off). The gate depends on
// GenericWorkload being enabled." KEP-6277: "Feature implemented behind the
// WorkloadWithStatefulSet feature flag (depends on GenericWorkload feature
// gate)", and "This feature depends on the GenericWorkload feature gate ...
// being enabled in both kube-controller-manager and kube-scheduler" (what
// kube-scheduler without GenericWorkload does is S-P8's).
//
// Each side of a gate (what validates spec.scheduling, what compiles it) is
// restarted with its KEP gate on and GenericWorkload off. "Depends on" allows
// two answers, and the report says which the implementation gave:
//   - refuses: the component does not run with those gates (component-base's
//     dependency check: Kubernetes binaries exit at flag parsing, "X is
//     enabled, but depends on features that are disabled");
//   - gate off: it runs, but as with its KEP gate off (D-P1/D-P2, S-P1/S-I11).
//
// What neither allows, and what fails here: a component that runs with the
// pair and acts on spec.scheduling as if GenericWorkload did not matter.
//
// A refusal proves something only if it is the pair's: so each entry first
// restarts the component with the gate and GenericWorkload both off (1.37's
// defaults, which every component must run with), then both on, and must
// see both run; only then the pair. Every other gate that depends on
// GenericWorkload and that the suite's cluster turns on is off throughout
// (cluster.GenericWorkloadDependents), or the component would refuse for
// that gate's sake.

const (
	readingRefuses = "refuses to run with the gate on and GenericWorkload off"
	readingGateOff = "runs with the gate on and GenericWorkload off as with the gate off"
)

// gateSide is one side of a KEP gate, as the vendor hook names it.
type gateSide struct {
	gate      framework.FeatureGate
	component localcluster.Component
}

// with returns the change that restarts s's component with its KEP gate
// and GenericWorkload as given, and every other dependent gate of the
// suite's cluster off.
func (s gateSide) with(gate, genericWorkload bool) framework.ComponentChange {
	gates := map[string]bool{string(framework.GenericWorkload): genericWorkload}
	for _, g := range cluster.GenericWorkloadDependents {
		if cluster.IsGate(g) {
			gates[g] = false
		}
	}
	gates[string(s.gate)] = gate
	return framework.ComponentChange{Component: s.component, ComponentConfig: localcluster.ComponentConfig{FeatureGates: gates}}
}

var _ = ginkgo.Describe("The KEP gates depend on GenericWorkload", framework.Serial, framework.Disruptive,
	framework.WithFeatureGate(framework.GenericWorkload), func() {
		f := framework.New("gate-dependency")

		ginkgo.DescribeTable("a component with its KEP gate on and GenericWorkload off refuses to run, or runs as with the gate off",
			func(ctx context.Context, side gateSide, gateOff func(context.Context, *framework.Framework)) {
				trials := framework.NewTrials(side.with(false, false), side.with(true, true), side.with(true, false))
				component := framework.HookComponent(side.component)
				for _, control := range []bool{false, true} {
					ginkgo.By(fmt.Sprintf("control: %s runs with %s and GenericWorkload both %s", component, side.gate, onOff(control)))
					gomega.Expect(trials.Try(ctx, side.with(control, control))).To(gomega.Succeed(),
						"%s with %s and GenericWorkload both %s must run, or a refusal of the pair below would prove nothing", component, side.gate, onOff(control))
				}

				ginkgo.By(fmt.Sprintf("%s with %s on and GenericWorkload off", component, side.gate))
				if err := trials.Try(ctx, side.with(true, false)); err != nil {
					ginkgo.GinkgoWriter.Printf("%s did not run with %s=true,GenericWorkload=false (restored at cleanup): %v\n", component, side.gate, err)
					framework.RecordReading(readingRefuses)
					return
				}
				framework.RecordReading(readingGateOff)
				gateOff(ctx, f)
			},
			ginkgo.Entry("the admission side of WorkloadWithDeployment", framework.ID("D-P8"), framework.KEP(6276),
				gateSide{framework.WorkloadWithDeployment, framework.ReferenceWebhook}, deploymentAdmissionOff),
			ginkgo.Entry("the controller side of WorkloadWithDeployment", framework.ID("D-P8"), framework.KEP(6276),
				gateSide{framework.WorkloadWithDeployment, framework.ReferenceControllerManager}, deploymentControllersOff),
			ginkgo.Entry("the admission side of WorkloadWithStatefulSet", framework.ID("S-P11"), framework.KEP(6277),
				gateSide{framework.WorkloadWithStatefulSet, framework.ReferenceWebhook}, statefulSetAdmissionOff),
			ginkgo.Entry("the controller side of WorkloadWithStatefulSet", framework.ID("S-P11"), framework.KEP(6277),
				gateSide{framework.WorkloadWithStatefulSet, framework.ReferenceControllerManager}, statefulSetControllersOff),
		)
	})

// deploymentAdmissionOff: D-P1's gate-off answer, "requests that set
// spec.scheduling are rejected" (Forbidden at spec.scheduling).
func deploymentAdmissionOff(ctx context.Context, f *framework.Framework) {
	ginkgo.By("a new Deployment with spec.scheduling is rejected, as with WorkloadWithDeployment off")
	_, err := tryCreateDeployment(ctx, f, "needs-generic-workload", 2, gangDeployment())
	framework.ExpectGateOff(framework.GateOffCreate{Err: err, Annotation: framework.Intent.DeploymentAnnotation()})
}

// deploymentControllersOff: D-P2's gate-off answer: a gang Deployment gets no
// Workload or PodGroup, and its pods run ungrouped.
func deploymentControllersOff(ctx context.Context, f *framework.Framework) {
	ginkgo.By("a new gang Deployment gets no Workload or PodGroup and runs ungrouped, as with WorkloadWithDeployment off")
	d := apps.Deployment(createDeployment(ctx, f, "needs-generic-workload", 2, gangDeployment()))
	apps.WaitForUngrouped(ctx, f, d, 2)
	apps.KeepsState(ctx, f, d, "no Workload and no PodGroup", noSchedulingObjects())
}

// statefulSetAdmissionOff: S-P1's gate-off answer on the apiserver side:
// rejected, or (KEP-6277 allows it) admitted with the intent cleared.
func statefulSetAdmissionOff(ctx context.Context, f *framework.Framework) {
	ginkgo.By("a new StatefulSet with spec.scheduling is rejected or stored without it, as with WorkloadWithStatefulSet off")
	_, err := tryCreateStatefulSet(ctx, f, "needs-generic-workload", 2, true, gangStatefulSet())
	s := apps.App{Kind: apps.KindStatefulSet, Name: "needs-generic-workload"}
	framework.ExpectGateOff(framework.GateOffCreate{Err: err, Annotation: framework.Intent.StatefulSetAnnotation(), ClearsAllowed: true,
		Stored: func() (bool, error) { return storedGang(ctx, f, s) }})
}

// statefulSetControllersOff: S-I11's answer: no Workload or PodGroup, pods
// run as upstream's.
func statefulSetControllersOff(ctx context.Context, f *framework.Framework) {
	ginkgo.By("a new gang StatefulSet gets no Workload or PodGroup and runs ungrouped, as with WorkloadWithStatefulSet off")
	s := apps.StatefulSet(createStatefulSet(ctx, f, "needs-generic-workload", 2, true, gangStatefulSet()))
	apps.WaitForUngrouped(ctx, f, s, 2)
	apps.KeepsState(ctx, f, s, "no Workload and no PodGroup", noSchedulingObjects())
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

func noSchedulingObjects() gomega.OmegaMatcher {
	return gomega.SatisfyAll(gomega.HaveField("Workloads", gomega.BeEmpty()), gomega.HaveField("PodGroups", gomega.BeEmpty()))
}
