package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/crashpoint"
	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// Crash recovery (D-E6, S-I8, S-U12's end-to-end twin, S-I5 by crash): for
// every crash point of the reference controller-manager the controller dies
// right after one step of the workflow, is started again, and must converge
// to exactly one Workload, one PodGroup per ReplicaSet / StatefulSet, every
// pod running in it, no pod lost, and no duplicate at ANY moment (a watcher
// checks every Workload/PodGroup event from before the app exists).
//
// Two ways to reach the partial state (--crash-mode):
//   - crashpoint: restart was-controller-manager with --crash-after=<point>@<ns>;
//     it exits with crashpoint.ExitCode right after that step's write.
//   - seed: for the create points, let the implementation under test build
//     the app, stop its controllers and delete what it wrote after the point
//     (so every name is the implementation's own, never guessed); for the
//     minCount points, stop them, scale, and write the new minCount into the
//     implementation's Workload. framework.StopImplementationControllers
//     stops them: on the harness's cluster it restarts the binary with
//     --controllers= (none); on an existing cluster
//     --controller-restart-command does it.
//
// Both start from the same partial state, asserted exactly before recovery.

// crashCase is one crash point and the app it is exercised with.
type crashCase struct {
	Point crashpoint.Point
	Kind  string // "Deployment" or "StatefulSet"
	// Scale: the app first runs at crashFrom replicas, then is scaled to
	// crashTo (the minCount points); otherwise it is created at crashTo.
	Scale bool
	// Partial is the exact state after the crash, before recovery.
	Partial crashShape
}

const crashFrom, crashTo = 3, 5

// crashShape is what the specs count: equal shapes are equal states.
type crashShape struct {
	Workloads, ReplicaSets, PodGroups, Pods, Running int
	WorkloadMinCount, PodGroupMinCount               int32
}

var _ = ginkgo.Describe("Controller crash recovery", framework.Serial, framework.Disruptive,
	framework.WithFeatureGate(framework.GenericWorkload), func() {
		f := framework.New("crash")

		ginkgo.DescribeTable("a Deployment converges without duplicates after a crash",
			func(ctx context.Context, c crashCase) { runCrashCase(ctx, f, c) },
			ginkgo.Entry("after the Workload is created and before the ReplicaSet", framework.ID("D-E6"), framework.KEP(6276),
				framework.WithFeatureGate(framework.WorkloadWithDeployment), crashCase{
					Point: crashpoint.DeploymentAfterWorkloadCreate, Kind: "Deployment",
					Partial: crashShape{Workloads: 1, WorkloadMinCount: crashTo},
				}),
			ginkgo.Entry("after the PodGroup is created and before the pods", framework.ID("D-E6"), framework.KEP(6276),
				framework.WithFeatureGate(framework.WorkloadWithDeployment), crashCase{
					Point: crashpoint.DeploymentAfterPodGroupCreate, Kind: "Deployment",
					Partial: crashShape{Workloads: 1, ReplicaSets: 1, PodGroups: 1, WorkloadMinCount: crashTo, PodGroupMinCount: crashTo},
				}),
			ginkgo.Entry("between the Workload and the PodGroup minCount updates of a scale-up", framework.ID("D-E6"), framework.KEP(6276),
				framework.WithFeatureGate(framework.WorkloadWithDeployment), crashCase{
					Point: crashpoint.DeploymentBetweenMinCountUpdates, Kind: "Deployment", Scale: true,
					Partial: crashShape{Workloads: 1, ReplicaSets: 1, PodGroups: 1, Pods: crashFrom, Running: crashFrom, WorkloadMinCount: crashTo, PodGroupMinCount: crashFrom},
				}),
		)

		ginkgo.DescribeTable("a StatefulSet converges without duplicates after a crash",
			func(ctx context.Context, c crashCase) { runCrashCase(ctx, f, c) },
			ginkgo.Entry("between Workload and PodGroup creation: only the missing PodGroup is created (S-U12's e2e twin)",
				framework.ID("S-I8", "S-U12"), framework.KEP(6277), framework.WithFeatureGate(framework.WorkloadWithStatefulSet), crashCase{
					Point: crashpoint.StatefulSetAfterWorkloadCreate, Kind: "StatefulSet",
					Partial: crashShape{Workloads: 1, WorkloadMinCount: crashTo},
				}),
			ginkgo.Entry("after the PodGroup is created and before the pods", framework.ID("S-I8"), framework.KEP(6277),
				framework.WithFeatureGate(framework.WorkloadWithStatefulSet), crashCase{
					Point: crashpoint.StatefulSetAfterPodGroupCreate, Kind: "StatefulSet",
					Partial: crashShape{Workloads: 1, PodGroups: 1, WorkloadMinCount: crashTo, PodGroupMinCount: crashTo},
				}),
			ginkgo.Entry("between the Workload and the PodGroup minCount updates of a scale-up", framework.ID("S-I5"), framework.KEP(6277),
				framework.WithFeatureGate(framework.WorkloadWithStatefulSet), crashCase{
					Point: crashpoint.StatefulSetBetweenMinCountUpdates, Kind: "StatefulSet", Scale: true,
					Partial: crashShape{Workloads: 1, PodGroups: 1, Pods: crashFrom, Running: crashFrom, WorkloadMinCount: crashTo, PodGroupMinCount: crashFrom},
				}),
		)
	})

func runCrashCase(ctx context.Context, f *framework.Framework, c crashCase) {
	ctl := crashControllerFor(c, f)
	dups := framework.WatchForDuplicates(ctx, f.ClientSet, f.Namespace)
	app := &crashApp{f: f, kind: c.Kind, name: "crash"}

	var before apps.State
	if c.Scale {
		ginkgo.By(fmt.Sprintf("running the gang %s at %d replicas", c.Kind, crashFrom))
		app.create(ctx, crashFrom)
		before = app.waitConverged(ctx, crashFrom, dups)
	}
	act := func() {
		if c.Scale {
			ginkgo.By(fmt.Sprintf("scaling to %d", crashTo))
			app.scale(ctx, crashTo)
		} else {
			ginkgo.By(fmt.Sprintf("creating the gang %s with %d replicas", c.Kind, crashTo))
			app.create(ctx, crashTo)
		}
	}
	switch {
	case ctl.seed && !c.Scale:
		ginkgo.By("letting the implementation build the app, then stopping it and deleting what it wrote after " + string(c.Point))
		act()
		app.waitConverged(ctx, crashTo, dups)
		ctl.interrupt(ctx)
		ctl.expectStopped(ctx, f, c.Kind)
		app.rollBack(ctx, c.Point)
	case ctl.seed:
		ginkgo.By("stopping the controllers and seeding the state a crash at " + string(c.Point) + " leaves")
		ctl.interrupt(ctx)
		ctl.expectStopped(ctx, f, c.Kind)
		act()
		app.seedMinCount(ctx)
	default:
		ginkgo.By("arming crash point " + string(c.Point))
		ctl.interrupt(ctx) // restarts the controller-manager armed
		act()
		ctl.waitCrash(ctx, c.Point)
	}

	partial := app.read(ctx)
	logCrash("partial state after %s: %s", c.Point, partial)
	gomega.Expect(crashShapeOf(partial)).To(gomega.Equal(c.Partial), "the state left at %s: %s", c.Point, partial)
	if c.Scale {
		gomega.Expect(partial.PodUIDs()).To(gomega.Equal(before.PodUIDs()), "pods changed before the crash: %s", partial)
	}
	dups.ExpectNone()

	ginkgo.By("starting the controllers without a crash point")
	ctl.resume(ctx)
	after := app.waitConverged(ctx, crashTo, dups)
	logCrash("converged: %s", after)

	ginkgo.By("the partial state's objects were completed, not replaced; no pod was lost")
	gomega.Expect(after.Workloads[0].UID).To(gomega.Equal(partial.Workloads[0].UID), "the Workload was recreated: partial %s, now %s", partial, after)
	if len(partial.PodGroups) == 1 {
		gomega.Expect(after.PodGroups[0].UID).To(gomega.Equal(partial.PodGroups[0].UID), "the PodGroup was recreated: partial %s, now %s", partial, after)
	}
	for name, uid := range partial.PodUIDs() {
		gomega.Expect(after.PodUIDs()).To(gomega.HaveKeyWithValue(name, uid), "pod %s that ran before the crash was lost or recreated: %s", name, after)
	}
	dups.ExpectNone()
}

// --- the controller under test: armed, stopped, started ---

// crashController makes the partial state and then lets recovery start.
type crashController struct {
	seed      bool
	interrupt func(ctx context.Context) // arm (crashpoint) or stop (seed)
	resume    func(ctx context.Context)
	// waitCrash waits until the armed controller-manager reached the point
	// and exited (crashpoint mode).
	waitCrash func(ctx context.Context, point crashpoint.Point)
	// stop names how seed mode stops the controllers, for failure messages
	// (framework.ImplementationControllersStop).
	stop string
}

// crashControllerFor picks the mode, or skips saying why neither works.
func crashControllerFor(c crashCase, f *framework.Framework) *crashController {
	mode := framework.TestContext.CrashMode
	lc := framework.LocalCluster
	switch mode {
	case "auto":
		// Crash points exist only in the reference: armed where the harness
		// runs it; elsewhere the implementation may be anyone's.
		mode = "seed"
		if lc != nil {
			mode = "crashpoint"
		}
	case "crashpoint", "seed":
	default:
		ginkgo.Fail(fmt.Sprintf("--crash-mode=%q: want auto, crashpoint or seed", mode))
	}
	if mode == "seed" {
		// Stop and start the controllers through the framework's one seam
		// (framework/controllers.go), which starts them again after the spec
		// whatever happens, before the namespace is deleted (cleanups run LIFO).
		how, cannot := framework.ImplementationControllersStop()
		if cannot != "" {
			ginkgo.Skip("crash recovery (--crash-mode=seed): " + cannot)
		}
		ctl := &crashController{seed: true, stop: how}
		ctl.interrupt = func(ctx context.Context) { ctl.resume = framework.StopImplementationControllers(ctx) }
		return ctl
	}
	if lc != nil && !slices.Contains(lc.RunningComponents(), framework.ReferenceControllerManager) {
		ginkgo.Skip("the local cluster runs without the reference implementation (was-controller-manager): nothing to crash")
	}
	// Scoped to the spec's namespace: no other object can trigger it.
	arm := framework.ComponentChange{
		Component:       framework.ReferenceControllerManager,
		ComponentConfig: localcluster.ComponentConfig{ExtraArgs: map[string]string{crashpoint.Flag: crashpoint.Arg(c.Point, f.Namespace)}},
	}
	// Reconfigure restores the suite's settings after the spec whatever
	// happens (before the namespace is deleted: cleanups run LIFO); resume
	// restores them at once.
	ctl := &crashController{}
	if lc == nil {
		// An existing cluster running the reference from deploy/: the hook
		// rolls its DaemonSet out with the flag.
		framework.RequireReconfigure(arm)
		var armed *referencePods
		ctl.interrupt = func(ctx context.Context) {
			ctl.resume = framework.Reconfigure(ctx, framework.ReconfigureInput{Changes: []framework.ComponentChange{arm}})
			armed = armedReferencePods(ctx, f.ClientSet)
		}
		ctl.waitCrash = func(ctx context.Context, point crashpoint.Point) { armed.waitCrash(ctx, point) }
		return ctl
	}
	var armedPID int
	ctl.interrupt = func(ctx context.Context) {
		ctl.resume = framework.Reconfigure(ctx, framework.ReconfigureInput{Cluster: lc, Changes: []framework.ComponentChange{arm}})
		armedPID = lc.PIDs()[framework.ReferenceControllerManager]
	}
	ctl.waitCrash = func(ctx context.Context, point crashpoint.Point) { waitProcessCrash(ctx, lc, armedPID, point) }
	return ctl
}

func logCrash(format string, args ...any) {
	ginkgo.GinkgoWriter.Printf(format+"\n", args...)
}

// expectStopped proves, before the suite seeds a partial state, that the
// stop stopped something: the state is meant to be what a crash leaves, and
// running controllers would repair it before the spec "starts" them, so the
// spec would judge nothing. A small gang app of kind, the kind the case
// exercises, is a write the implementation's controllers answer (its apps/v1
// controller sets status.observedGeneration and makes a ReplicaSet or pods;
// the KEPs' controllers make a Workload); none of it may come for the
// stays-unbound window. The probe is deleted before the seeding.
func (c *crashController) expectStopped(ctx context.Context, f *framework.Framework, kind string) {
	ginkgo.GinkgoHelper()
	ginkgo.By("proving the controllers are stopped: a gang " + kind + " probe must get no answer for " + f.Timeouts.StaysUnbound.String())
	var probe apps.App
	var remove, get func(context.Context) error
	if kind == "Deployment" {
		api := f.ClientSet.AppsV1().Deployments(f.Namespace)
		probe = apps.Deployment(createDeployment(ctx, f, "stop-probe", 1, gangDeployment()))
		remove = func(ctx context.Context) error { return api.Delete(ctx, probe.Name, metav1.DeleteOptions{}) }
		get = func(ctx context.Context) error { _, err := api.Get(ctx, probe.Name, metav1.GetOptions{}); return err }
	} else {
		api := f.ClientSet.AppsV1().StatefulSets(f.Namespace)
		probe = apps.StatefulSet(createStatefulSet(ctx, f, "stop-probe", 1, true, gangStatefulSet()))
		remove = func(ctx context.Context) error { return api.Delete(ctx, probe.Name, metav1.DeleteOptions{}) }
		get = func(ctx context.Context) error { _, err := api.Get(ctx, probe.Name, metav1.GetOptions{}); return err }
	}
	gomega.Consistently(ctx, func(ctx context.Context) error {
		answered, err := probeAnswers(ctx, f, probe)
		if err != nil || len(answered) == 0 {
			return err
		}
		return fmt.Errorf("%s left the controllers running: %s", c.stop, strings.Join(answered, "; "))
	}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.Succeed())
	gomega.Expect(remove(ctx)).To(gomega.Succeed(), "deleting the stop probe %s", probe)
	gomega.Eventually(ctx, func(ctx context.Context) bool { return apierrors.IsNotFound(get(ctx)) }).
		WithTimeout(f.Timeouts.Cleanup).WithPolling(f.Timeouts.Poll).Should(gomega.BeTrue(), "waiting for the stop probe %s to be gone", probe)
}

// probeAnswers lists what the controllers did about the probe a: an
// observed generation, ReplicaSets, Workloads, PodGroups or pods.
func probeAnswers(ctx context.Context, f *framework.Framework, a apps.App) ([]string, error) {
	var observed int64
	if a.Kind == apps.KindDeployment {
		d, err := f.ClientSet.AppsV1().Deployments(f.Namespace).Get(ctx, a.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		observed = d.Status.ObservedGeneration
	} else {
		s, err := f.ClientSet.AppsV1().StatefulSets(f.Namespace).Get(ctx, a.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		observed = s.Status.ObservedGeneration
	}
	var out []string
	if observed > 0 {
		out = append(out, fmt.Sprintf("%s has status.observedGeneration %d", a, observed))
	}
	s := apps.Read(ctx, f, a)
	if len(s.ReplicaSets) > 0 {
		out = append(out, fmt.Sprintf("ReplicaSets %v", s.ReplicaSets))
	}
	if len(s.Workloads) > 0 || len(s.PodGroups) > 0 {
		out = append(out, fmt.Sprintf("Workloads %v, PodGroups %v", s.Workloads, s.PodGroups))
	}
	if len(s.Pods) > 0 {
		out = append(out, fmt.Sprintf("pods %v", s.Pods))
	}
	return out, nil
}

// waitProcessCrash waits until the armed local process logged the point and exited.
func waitProcessCrash(ctx context.Context, lc *localcluster.Cluster, armedPID int, point crashpoint.Point) {
	gomega.Eventually(ctx, func() bool {
		_, crashed := localCrashed(lc, armedPID, point)
		return crashed
	}).WithTimeout(framework.TestContext.Timeouts.PodsBound).WithPolling(framework.TestContext.Timeouts.Poll).Should(
		gomega.BeTrue(), "waiting for was-controller-manager (pid %d) to log %q and exit", armedPID, crashpoint.Marker(point))
}

// --- the app: a gang Deployment or StatefulSet ---

type crashApp struct {
	f          *framework.Framework
	kind, name string
	uid        types.UID
	deployment *appsv1.Deployment
	set        *appsv1.StatefulSet
}

func (a *crashApp) create(ctx context.Context, replicas int32) {
	var err error
	if a.kind == "Deployment" {
		a.deployment, err = tryCreateDeployment(ctx, a.f, a.name, replicas, gangDeployment())
		if err == nil {
			a.uid = a.deployment.UID
		}
	} else {
		a.set, err = tryCreateStatefulSet(ctx, a.f, a.name, replicas, true, gangStatefulSet())
		if err == nil {
			a.uid = a.set.UID
		}
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating %s %s", a.kind, a.name)
}

func (a *crashApp) scale(ctx context.Context, replicas int32) {
	apps.Scale(ctx, a.f, apps.App{Kind: a.kind, Name: a.name}, replicas)
}

// seedMinCount writes the new minCount of a scale-up into the Workload
// template, as the controller's first write of the scale would: the
// Workload is the implementation's own (found by its owner), nothing else moved.
func (a *crashApp) seedMinCount(ctx context.Context) {
	sched := a.f.ClientSet.SchedulingV1beta1().Workloads(a.f.Namespace)
	s := a.read(ctx)
	gomega.Expect(s.Workloads).To(gomega.HaveLen(1), "the running app's Workload: %s", s)
	w, err := sched.Get(ctx, s.Workloads[0].Name, metav1.GetOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "reading the Workload")
	w.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount = crashTo
	_, err = sched.Update(ctx, w, metav1.UpdateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "seeding the Workload's new minCount")
}

// rollBack deletes, with the cluster admin's client, what the stopped
// controllers wrote after point, and waits until it is gone: the state a
// crash right after point leaves, with the names the implementation chose.
func (a *crashApp) rollBack(ctx context.Context, point crashpoint.Point) {
	cs, ns := a.f.ClientSet, a.f.Namespace
	s := a.read(ctx)
	var gone []func(context.Context) error // each Get must end NotFound
	now := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	deletePods := func() {
		for _, p := range s.Pods {
			gomega.Expect(ignoreNotFound(cs.CoreV1().Pods(ns).Delete(ctx, p.Name, now))).To(gomega.Succeed(), "deleting pod %s", p.Name)
			gone = append(gone, func(ctx context.Context) error {
				_, err := cs.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
				return err
			})
		}
	}
	deletePodGroups := func() {
		for _, pg := range s.PodGroups {
			api := cs.SchedulingV1beta1().PodGroups(ns)
			gomega.Expect(ignoreNotFound(api.Delete(ctx, pg.Name, metav1.DeleteOptions{}))).To(gomega.Succeed(), "deleting PodGroup %s", pg.Name)
			gone = append(gone, func(ctx context.Context) error { _, err := api.Get(ctx, pg.Name, metav1.GetOptions{}); return err })
		}
	}
	switch point {
	case crashpoint.DeploymentAfterWorkloadCreate:
		for _, name := range s.ReplicaSets {
			api := cs.AppsV1().ReplicaSets(ns)
			gomega.Expect(ignoreNotFound(api.Delete(ctx, name, metav1.DeleteOptions{}))).To(gomega.Succeed(), "deleting ReplicaSet %s", name)
			gone = append(gone, func(ctx context.Context) error { _, err := api.Get(ctx, name, metav1.GetOptions{}); return err })
		}
		deletePods()
		deletePodGroups()
	case crashpoint.StatefulSetAfterWorkloadCreate:
		deletePods()
		deletePodGroups()
	case crashpoint.DeploymentAfterPodGroupCreate, crashpoint.StatefulSetAfterPodGroupCreate:
		deletePods()
	default:
		ginkgo.Fail("no roll-back to crash point " + string(point))
	}
	gomega.Eventually(ctx, func(ctx context.Context) error {
		for _, get := range gone {
			if err := get(ctx); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there (or unreadable: %v)", err)
			}
		}
		return nil
	}).WithTimeout(a.f.Timeouts.Cleanup).WithPolling(a.f.Timeouts.Poll).Should(gomega.Succeed(),
		"waiting for what the controllers wrote after %s to be deleted: %s", point, s)
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// --- reading the state ---

// crashShapeOf counts what the specs compare.
func crashShapeOf(s apps.State) crashShape {
	out := crashShape{Workloads: len(s.Workloads), ReplicaSets: len(s.ReplicaSets), PodGroups: len(s.PodGroups), Pods: len(s.Pods)}
	for _, p := range s.Pods {
		if p.Phase == corev1.PodRunning {
			out.Running++
		}
	}
	if len(s.Workloads) == 1 {
		out.WorkloadMinCount = s.Workloads[0].MinCount
	}
	if len(s.PodGroups) == 1 {
		out.PodGroupMinCount = s.PodGroups[0].MinCount
	}
	return out
}

func (a *crashApp) read(ctx context.Context) apps.State {
	return apps.Read(ctx, a.f, apps.App{Kind: a.kind, Name: a.name})
}

// waitConverged waits for one Workload and one PodGroup at minCount n (and,
// for a Deployment, one ReplicaSet), and n pods Running in that PodGroup. It
// fails at once when dups has seen a duplicate.
func (a *crashApp) waitConverged(ctx context.Context, n int32, dups *framework.DuplicateWatcher) apps.State {
	var s apps.State
	rs := 0
	if a.kind == "Deployment" {
		rs = 1
	}
	want := crashShape{Workloads: 1, ReplicaSets: rs, PodGroups: 1, Pods: int(n), Running: int(n), WorkloadMinCount: n, PodGroupMinCount: n}
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) error {
		if v := dups.Violations(); len(v) > 0 {
			return gomega.StopTrying(fmt.Sprintf("a duplicate Workload or PodGroup existed: %v", v))
		}
		s = a.read(ctx)
		if got := crashShapeOf(s); got != want {
			return fmt.Errorf("shape %+v, want %+v: %s", got, want, s)
		}
		var errs []error
		for _, p := range s.Pods {
			if p.Group != s.PodGroups[0].Name {
				errs = append(errs, fmt.Errorf("pod %s names PodGroup %q, want %s", p.Name, p.Group, s.PodGroups[0].Name))
			}
		}
		return errors.Join(errs...)
	}).WithTimeout(framework.TestContext.Timeouts.PodsBound).WithPolling(framework.TestContext.Timeouts.Poll).Should(gomega.Succeed(),
		"waiting for %s %s to converge to one Workload and one PodGroup at minCount %d with %d pods running in it", a.kind, a.name, n, n)
	return s
}
