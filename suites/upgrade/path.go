package upgrade

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// The upgrade -> downgrade -> upgrade path of a KEP gate, scripted the way an
// operator rolls it: on upgrade the apiserver side (was-webhook) first, then
// the controller side; on downgrade the controller side first. The cluster
// starts "downgraded" (gate off on both sides) and ends upgraded; the suite's
// own settings come back after the spec.

// rollGate turns gate on or off on both sides in rollout order. The first
// call of a spec registers the restore of the suite's settings; later calls
// keep their change, so the restore goes back to the start in one step.
func rollGate(ctx context.Context, gate framework.FeatureGate, on, first bool) {
	order := []localcluster.Component{framework.ReferenceWebhook, framework.ReferenceControllerManager}
	if !on {
		order = []localcluster.Component{framework.ReferenceControllerManager, framework.ReferenceWebhook}
	}
	ginkgo.By(fmt.Sprintf("%s: %s=%t on %v", map[bool]string{true: "upgrade", false: "downgrade"}[on], gate, on, order))
	framework.Reconfigure(ctx, framework.ReconfigureInput{KeepAfterSpec: !first, Changes: framework.GateOn(gate, on, order...)})
}

// deleteUngrouped deletes the pods that name no PodGroup: the KEPs' recovery
// from the mixed-pod state.
func deleteUngrouped(ctx context.Context, f *framework.Framework, s apps.State) {
	for _, p := range s.Ungrouped() {
		ginkgo.By("recovering from the mixed-pod state: deleting " + p.Name + ", made while the gate was off")
		gomega.Expect(f.ClientSet.CoreV1().Pods(f.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})).To(gomega.Succeed())
	}
}

// pathSubject is what the path needs of one KEP's workload kind.
type pathSubject struct {
	gate framework.FeatureGate
	// create makes an app of small pods, with gang intent when gang is set,
	// and returns the intent seam's error (a downgraded cluster rejects it).
	create func(ctx context.Context, f *framework.Framework, name string, replicas int32, gang bool) (apps.App, error)
	// gateOff describes a create with intent while the gate is off on the
	// apiserver side, for framework.ExpectGateOff: the readings the kind's
	// KEP allows, and how to read the stored intent back.
	gateOff func(ctx context.Context, f *framework.Framework, name string, err error) framework.GateOffCreate
}

var deploymentSubject = pathSubject{
	gate: framework.WorkloadWithDeployment,
	create: func(ctx context.Context, f *framework.Framework, name string, replicas int32, gang bool) (apps.App, error) {
		var cfg *framework.DeploymentScheduling
		if gang {
			cfg = gangDeployment()
		}
		_, err := tryCreateDeployment(ctx, f, name, replicas, cfg)
		return apps.App{Kind: "Deployment", Name: name}, err
	},
	// KEP-6276 says rejected, in its marker and in its PRR alike.
	gateOff: func(_ context.Context, _ *framework.Framework, _ string, err error) framework.GateOffCreate {
		return framework.GateOffCreate{Err: err, Annotation: framework.Intent.DeploymentAnnotation()}
	},
}

var statefulSetSubject = pathSubject{
	gate: framework.WorkloadWithStatefulSet,
	create: func(ctx context.Context, f *framework.Framework, name string, replicas int32, gang bool) (apps.App, error) {
		var cfg *framework.StatefulSetScheduling
		if gang {
			cfg = gangStatefulSet()
		}
		_, err := tryCreateStatefulSet(ctx, f, name, replicas, true, cfg)
		return apps.App{Kind: "StatefulSet", Name: name}, err
	},
	// KEP-6277's marker says rejected, its PRR "Clears spec.scheduling on new
	// creates": either reading passes (framework.ReadingRejects/ReadingClears).
	gateOff: func(ctx context.Context, f *framework.Framework, name string, err error) framework.GateOffCreate {
		return framework.GateOffCreate{Err: err, Annotation: framework.Intent.StatefulSetAnnotation(), ClearsAllowed: true,
			Stored: func() (bool, error) {
				cfg, err := framework.Intent.StatefulSetScheduling(ctx, f.Namespace, name)
				return cfg != nil, err
			}}
	},
}

// walkPath is the whole scripted path, asserting at every step what the KEPs
// promise for s's kind.
func walkPath(ctx context.Context, f *framework.Framework, s pathSubject) {
	framework.RequireReconfigure()
	history := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource)
	mustCreate := func(name string, replicas int32, gang bool) apps.App {
		a, err := s.create(ctx, f, name, replicas, gang)
		gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "creating %s", a)
		return a
	}
	rollGate(ctx, s.gate, false, true)

	ginkgo.By("downgraded: spec.scheduling is rejected (or, where the KEP allows, cleared); an app without it runs")
	tooEarly, err := s.create(ctx, f, "too-early", 1, true)
	cleared := framework.ExpectGateOff(s.gateOff(ctx, f, tooEarly.Name, err)) == framework.ReadingClears
	var tooEarlyBefore apps.State
	if cleared {
		// Admitted without its intent: an ordinary app, for which nothing
		// is created now or after the upgrade (expectCreations below counts
		// every Workload and PodGroup creation of the whole path).
		tooEarlyBefore = apps.WaitForUngrouped(ctx, f, tooEarly, 1)
	}
	plain := mustCreate("plain", 2, false)
	plainBefore := apps.WaitForUngrouped(ctx, f, plain, 2)

	rollGate(ctx, s.gate, true, false)
	gang := mustCreate("gang", 3, true)
	before := apps.WaitForGang(ctx, f, gang, 3, 3)
	apps.ExpectPodsUndisturbed(apps.Read(ctx, f, plain), plainBefore)

	rollGate(ctx, s.gate, false, false)
	ginkgo.By("downgraded: the gang keeps its pods and objects; scaling it makes a pod outside the group")
	apps.ExpectPodsUndisturbed(apps.Read(ctx, f, gang), before)
	apps.Scale(ctx, f, gang, 4)
	mixed := apps.WaitForState(ctx, f, gang, "3 grouped pods, 1 ungrouped, all bound, objects at minCount 3", gomega.SatisfyAll(
		apps.Mixed(4, 1), apps.AtMinCount(3)))
	apps.ExpectSameObjects(mixed, before)

	rollGate(ctx, s.gate, true, false)
	ginkgo.By("upgraded again: the same objects, re-synced to minCount 4; the mixed pod is still there")
	after := apps.WaitForState(ctx, f, gang, "minCount 4", apps.AtMinCount(4))
	apps.ExpectSameObjects(after, before)
	apps.ExpectPodsUndisturbed(after, mixed)
	gomega.Expect(after.Ungrouped()).To(gomega.HaveLen(1), "the pod made while downgraded has no schedulingGroup: %s", after)

	deleteUngrouped(ctx, f, after)
	recovered := apps.WaitForGang(ctx, f, gang, 4, 4)
	apps.ExpectSameObjects(recovered, before)
	apps.ExpectPodsUndisturbed(apps.Read(ctx, f, plain), plainBefore)
	if cleared {
		last := apps.Read(ctx, f, tooEarly)
		apps.ExpectPodsUndisturbed(last, tooEarlyBefore)
		gomega.Expect(last.Workloads).To(gomega.BeEmpty(), "a Workload was made for the app whose intent was cleared on create: %s", last)
		gomega.Expect(last.Ungrouped()).To(gomega.HaveLen(1), "the app whose intent was cleared on create: %s", last)
	}
	expectCreations(history, 1, 1)
}

var _ = ginkgo.Describe("Upgrade, downgrade and upgrade again", framework.Serial, framework.Disruptive, framework.WithFeatureGate(framework.GenericWorkload), func() {
	f := framework.New("upgrade-path")

	ginkgo.It("keeps a live gang Deployment through WorkloadWithDeployment upgrade -> downgrade -> upgrade, including the mixed-pod state",
		framework.ID("D-P4"), framework.KEP(6276), framework.WithFeatureGate(framework.WorkloadWithDeployment), func(ctx context.Context) {
			walkPath(ctx, f, deploymentSubject)
		})

	ginkgo.It("keeps a live gang StatefulSet through WorkloadWithStatefulSet upgrade -> downgrade -> upgrade, including the mixed-pod state",
		framework.ID("S-P6"), framework.KEP(6277), framework.WithFeatureGate(framework.WorkloadWithStatefulSet), func(ctx context.Context) {
			walkPath(ctx, f, statefulSetSubject)
		})
})
