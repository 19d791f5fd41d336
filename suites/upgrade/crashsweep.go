package upgrade

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/crashpoint"
	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// The crash sweep. D-E6 says "killing the controller between any two steps
// of the workflow converges without duplicate Workloads or PodGroups"; the
// named points of crash.go try three steps per kind, picked by hand. The
// sweep picks none: for each write sequence in crashSequences (one list) it
// crashes the controllers right after write 1 of the sequence, then after
// write 2, and so on, until a run of the sequence reaches its end without
// making the armed write. So every gap between two writes is tried, and the
// number of writes is measured, not assumed.
//
// Two ways to crash after write n:
//   - crashpoint (the harness's cluster running the reference): the reference
//     is restarted with --crash-after=write/<n>@<namespace> and exits right
//     after its n-th object write in the namespace succeeded
//     (api/crashpoint.WritePrefix says which writes count).
//   - kill (any other implementation, with --controller-restart-command): the
//     suite watches the app's Workloads, PodGroups, ReplicaSets and pods and
//     kills the controllers (the hook's kill) as soon as it has seen n of the
//     writes a watch can show (sweepObserver). The kill lands at most a hook
//     call after write n, not exactly there: the report says which mode ran.
//
// Each crash must recover to the state the KEPs require at the end of the
// sequence, with no duplicate Workload or PodGroup at any moment, the
// Workload and the final revision's PodGroup not recreated, and the final
// revision's pods that ran at the crash kept.

// crashSequence is one write sequence of the KEPs' workflows.
type crashSequence struct {
	Kind string // apps.KindDeployment or apps.KindStatefulSet
	// Action: create (the app does not exist before), scale, rollout (a new
	// pod template revision) or delete.
	Action string
	// Gang: the gang policy (a Deployment then uses Recreate, a StatefulSet
	// Parallel); otherwise basic (a Deployment then uses RollingUpdate).
	Gang     bool
	From, To int32 // replicas before and after the action
}

const (
	actionCreate  = "create"
	actionScale   = "scale"
	actionRollout = "rollout"
	actionDelete  = "delete"
)

// crashSequences is the one list the sweep's crash points come from: the
// sequences issue 23 names for each kind (create, scale up, scale down,
// scale to zero, Recreate rollout, RollingUpdate rollout, delete). A
// StatefulSet has no Recreate strategy; its rollout is RollingUpdate.
var crashSequences = []crashSequence{
	{Kind: apps.KindDeployment, Action: actionCreate, Gang: true, To: 2},
	{Kind: apps.KindDeployment, Action: actionScale, Gang: true, From: 2, To: 3},
	{Kind: apps.KindDeployment, Action: actionScale, Gang: true, From: 3, To: 2},
	{Kind: apps.KindDeployment, Action: actionScale, Gang: true, From: 2, To: 0},
	{Kind: apps.KindDeployment, Action: actionRollout, Gang: true, From: 2, To: 2},
	{Kind: apps.KindDeployment, Action: actionRollout, Gang: false, From: 2, To: 2},
	{Kind: apps.KindDeployment, Action: actionDelete, Gang: true, From: 2},
	{Kind: apps.KindStatefulSet, Action: actionCreate, Gang: true, To: 2},
	{Kind: apps.KindStatefulSet, Action: actionScale, Gang: true, From: 2, To: 3},
	{Kind: apps.KindStatefulSet, Action: actionScale, Gang: true, From: 3, To: 2},
	{Kind: apps.KindStatefulSet, Action: actionScale, Gang: true, From: 2, To: 0},
	{Kind: apps.KindStatefulSet, Action: actionRollout, Gang: true, From: 2, To: 2},
	{Kind: apps.KindStatefulSet, Action: actionDelete, Gang: true, From: 2},
}

// maxSweepWrites bounds a sequence's writes: more means a controller that
// never stops writing, which the sweep reports instead of running forever.
const maxSweepWrites = 40

func (q crashSequence) String() string {
	policy := "basic, RollingUpdate"
	if q.Gang && q.Kind == apps.KindDeployment {
		policy = "gang, Recreate"
	} else if q.Gang {
		policy = "gang, Parallel"
	}
	what := q.Action
	switch {
	case q.Action == actionCreate:
		what = fmt.Sprintf("create at %d", q.To)
	case q.Action == actionScale && q.To == 0:
		what = fmt.Sprintf("scale %d to zero", q.From)
	case q.Action == actionScale:
		what = fmt.Sprintf("scale %d to %d", q.From, q.To)
	case q.Action == actionRollout && q.Kind == apps.KindDeployment && q.Gang:
		what = "Recreate rollout"
	case q.Action == actionRollout:
		what = "RollingUpdate rollout"
	}
	return fmt.Sprintf("%s (%s): %s", q.Kind, policy, what)
}

// slug names the sequence's apps: DNS-1123, short.
func (q crashSequence) slug() string {
	kind := "d"
	if q.Kind == apps.KindStatefulSet {
		kind = "s"
	}
	policy := "b"
	if q.Gang {
		policy = "g"
	}
	return fmt.Sprintf("%s%s-%s-%d-%d", kind, policy, q.Action[:4], q.From, q.To)
}

// labels are the ids and gates of the sequence's spec.
func (q crashSequence) labels() []any {
	if q.Kind == apps.KindDeployment {
		return []any{framework.ID("D-E6"), framework.KEP(6276), framework.WithFeatureGate(framework.WorkloadWithDeployment)}
	}
	ids := framework.ID("S-I8")
	if q.Action == actionScale {
		ids = framework.ID("S-I8", "S-I5")
	}
	return []any{ids, framework.KEP(6277), framework.WithFeatureGate(framework.WorkloadWithStatefulSet)}
}

// CrashSweep labels the sweep's specs: on kind, where each controller
// restart is a pod's, make e2e-kind leaves them out unless asked
// (KIND_CRASH_SWEEP=1); the named points of crash.go keep D-E6 there.
var CrashSweep = ginkgo.Label("CrashSweep")

var _ = ginkgo.Describe("Controller crash sweep", framework.Serial, framework.Disruptive, CrashSweep,
	framework.WithFeatureGate(framework.GenericWorkload), func() {
		f := framework.New("sweep")
		for _, q := range crashSequences {
			ginkgo.It("crashes after every write of "+q.String()+" and converges without duplicates",
				append(q.labels(), func(ctx context.Context) { runCrashSweep(ctx, f, q) })...)
		}
	})

// runCrashSweep crashes the controllers after write 1, 2, ... of q until a
// run of q ends without reaching the armed write.
func runCrashSweep(ctx context.Context, f *framework.Framework, q crashSequence) {
	mode := sweepModeHere()
	dups := framework.WatchForDuplicates(ctx, f.ClientSet, f.Namespace)
	for n := 1; ; n++ {
		gomega.Expect(n).To(gomega.BeNumerically("<=", maxSweepWrites),
			"%s made more than %d writes in a run: the controllers do not settle", q, maxSweepWrites)
		if !runSweepTrial(ctx, f, q, n, mode, dups) {
			logCrash("%s: %d writes, %d crash points (%s), each recovered without a duplicate", q, n-1, n-1, mode)
			ginkgo.AddReportEntry("crash points", fmt.Sprintf("%s: %d (%s)", q, n-1, mode))
			return
		}
	}
}

// sweepModeHere is crashpoint on the harness's cluster running the
// reference, kill elsewhere (skipping, saying why, where neither works).
func sweepModeHere() string {
	lc := framework.LocalCluster
	if lc != nil && slices.Contains(lc.RunningComponents(), framework.ReferenceControllerManager) &&
		framework.TestContext.CrashMode != "seed" {
		return "crashpoint"
	}
	framework.RequireControllerKill()
	return "kill"
}

// sweepApp is one trial's app.
type sweepApp struct {
	f   *framework.Framework
	q   crashSequence
	app apps.App
}

// runSweepTrial runs q once with a crash armed after write n and says
// whether the crash came.
func runSweepTrial(ctx context.Context, f *framework.Framework, q crashSequence, n int, mode string, dups *framework.DuplicateWatcher) bool {
	a := &sweepApp{f: f, q: q, app: apps.App{Kind: q.Kind, Name: fmt.Sprintf("%s-w%d", q.slug(), n)}}
	ginkgo.By(fmt.Sprintf("%s, crash after write %d (%s)", q, n, mode))
	if q.Action != actionCreate {
		a.create(ctx, q.From)
		a.waitFinal(ctx, q.From, false, dups)
	}
	defer a.remove(ctx)

	var c sweepCrash
	if mode == "crashpoint" {
		c = armWritePoint(ctx, f, n)
	} else {
		c = killAtObservedWrite(ctx, f, n)
	}
	a.act(ctx)

	var partial sweepSnapshot
	var reached bool
	gomega.Eventually(ctx, func(ctx context.Context) error {
		if v := dups.Violations(); len(v) > 0 {
			return gomega.StopTrying(fmt.Sprintf("a duplicate Workload or PodGroup existed: %v", v))
		}
		if reached = c.reached(ctx); reached {
			partial = a.snapshot(ctx)
			return nil
		}
		_, err := a.finalState(ctx, q.To, q.Action == actionDelete)
		return err
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.Succeed(),
		"waiting for %s to reach write %d or to end without it", a.app, n)
	if !reached {
		// The sequence reached its end state. A write the controllers still
		// make after it (late, but a write of the sequence) reaches n too:
		// only a stays-unbound window without one ends the sweep.
		deadline := time.Now().Add(f.Timeouts.StaysUnbound)
		for !reached && time.Now().Before(deadline) {
			if reached = c.reached(ctx); reached {
				partial = a.snapshot(ctx)
			} else {
				time.Sleep(f.Timeouts.Poll)
			}
		}
		if !reached {
			c.recover(ctx)
			return false
		}
	}
	logCrash("%s crashed after write %d: %s\npartial state: %s", a.app, n, c.crash(ctx), partial.state)
	c.recover(ctx)
	after := a.waitFinal(ctx, q.To, q.Action == actionDelete, dups)
	a.expectCompleted(partial, after)
	dups.ExpectNone()
	return true
}

// --- crashing: a write point (the reference) or a kill at an observed write ---

// sweepCrash is how a trial crashes the controllers after write n.
type sweepCrash interface {
	// reached: write n was made (polled; no side effect).
	reached(ctx context.Context) bool
	// crash makes sure the controllers crashed there and says how.
	crash(ctx context.Context) string
	// recover starts the controllers again as they were before the trial.
	recover(ctx context.Context)
}

// writePoint is the local reference armed with --crash-after=write/<n>.
type writePoint struct {
	lc      *localcluster.Cluster
	pid     int
	point   crashpoint.Point
	restore func(context.Context)
}

// armWritePoint restarts the local reference armed at write n of the namespace.
func armWritePoint(ctx context.Context, f *framework.Framework, n int) *writePoint {
	w := &writePoint{lc: framework.LocalCluster, point: crashpoint.AfterWrite(n)}
	w.restore = framework.Reconfigure(ctx, framework.ReconfigureInput{Cluster: w.lc, Changes: []framework.ComponentChange{{
		Component:       framework.ReferenceControllerManager,
		ComponentConfig: localcluster.ComponentConfig{ExtraArgs: map[string]string{crashpoint.Flag: crashpoint.Arg(w.point, f.Namespace)}},
	}}})
	w.pid = w.lc.PIDs()[framework.ReferenceControllerManager]
	return w
}

func (w *writePoint) reached(context.Context) bool {
	_, crashed := localCrashed(w.lc, w.pid, w.point)
	return crashed
}

var sweepWriteLine = regexp.MustCompile(`crashpoint: write \d+ of the \d+ armed[^\n]*`)

// crash: the process exited at the point by itself; its log lists the writes.
func (w *writePoint) crash(context.Context) string {
	run, _ := localCrashed(w.lc, w.pid, w.point)
	return "the reference exited at " + string(w.point) + " after: " + strings.Join(sweepWriteLine.FindAllString(run, -1), "; ")
}

func (w *writePoint) recover(ctx context.Context) { w.restore(ctx) }

// localCrashed reads the armed run's log: whether it logged point and the
// process pid is gone.
func localCrashed(lc *localcluster.Cluster, pid int, point crashpoint.Point) (run string, crashed bool) {
	data, _ := os.ReadFile(lc.LogPath(framework.ReferenceControllerManager))
	run = string(data)
	if i := strings.LastIndex(run, "\n=== "); i >= 0 {
		run = run[i:] // the armed run only (the log holds every start)
	}
	return run, strings.Contains(run, crashpoint.Marker(point)) && syscall.Kill(pid, 0) != nil
}

// observedKill kills the implementation's controllers once n writes of the
// namespace were observed (observedWrites). The kill returns once the
// controllers run again.
type observedKill struct {
	n       int
	history *framework.WriteHistory
	// before is what the objects were when the watch started: a minCount
	// or replicas change is a write only against what it was.
	before []framework.Change
}

func killAtObservedWrite(ctx context.Context, f *framework.Framework, n int) *observedKill {
	k := &observedKill{n: n, history: framework.RecordWrites(ctx, f.Namespace,
		framework.WorkloadsResource, framework.PodGroupsResource, framework.ReplicaSetsResource, framework.PodsResource)}
	ns := f.Namespace
	workloads, err := f.ClientSet.SchedulingV1beta1().Workloads(ns).List(ctx, metav1.ListOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing Workloads")
	for _, w := range workloads.Items {
		k.before = append(k.before, framework.Change{Resource: "workloads", UID: string(w.UID), MinCount: framework.WorkloadMinCount(&w)})
	}
	podGroups, err := f.ClientSet.SchedulingV1beta1().PodGroups(ns).List(ctx, metav1.ListOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing PodGroups")
	for _, pg := range podGroups.Items {
		k.before = append(k.before, framework.Change{Resource: "podgroups", UID: string(pg.UID), MinCount: framework.PodGroupMinCount(&pg)})
	}
	replicaSets, err := f.ClientSet.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing ReplicaSets")
	for _, rs := range replicaSets.Items {
		k.before = append(k.before, framework.Change{Resource: "replicasets", UID: string(rs.UID), Replicas: ptr.Deref(rs.Spec.Replicas, 1)})
	}
	return k
}

func (k *observedKill) observed() []framework.Change {
	return observedWrites(k.before, k.history.Sorted())
}

func (k *observedKill) reached(context.Context) bool { return len(k.observed()) >= k.n }

func (k *observedKill) crash(ctx context.Context) string {
	nth := k.observed()[k.n-1]
	framework.KillImplementationControllers(ctx)
	return fmt.Sprintf("killed after observing write %d, %s; %d writes observed when the kill returned", k.n, nth, len(k.observed()))
}

func (k *observedKill) recover(context.Context) { k.history.Stop() }

// observedWrites are the writes a watch can attribute to the controllers: a
// creation, the first deletion of an object, a Workload's or PodGroup's
// minCount change and a ReplicaSet's replicas change, against before (the
// objects when the watch started) and the changes seen since. Other writes
// (a pod's status, the kubelet's; annotations) are not counted, so the n-th
// write observed may come later than the n-th write sent.
func observedWrites(before, changes []framework.Change) []framework.Change {
	var out []framework.Change
	last := map[string]framework.Change{}
	for _, c := range before {
		last[c.UID] = c
	}
	gone := map[string]bool{}
	for _, c := range changes {
		before, seen := last[c.UID]
		last[c.UID] = c
		switch {
		case c.Terminating:
			if !gone[c.UID] {
				gone[c.UID] = true
				out = append(out, c)
			}
		case c.Type == watch.Added:
			out = append(out, c)
		case seen && (before.MinCount != c.MinCount || before.Replicas != c.Replicas):
			out = append(out, c)
		}
	}
	return out
}

// --- the app ---

func (a *sweepApp) create(ctx context.Context, replicas int32) {
	f, name := a.f, a.app.Name
	var err error
	switch {
	case a.q.Kind == apps.KindDeployment && a.q.Gang:
		var d *appsv1.Deployment
		d, err = tryCreateDeployment(ctx, f, name, replicas, gangDeployment())
		if err == nil {
			a.app = apps.Deployment(d)
		}
	case a.q.Kind == apps.KindDeployment:
		var d *appsv1.Deployment
		d, err = framework.Intent.CreateDeployment(ctx, builder.Deployment(name, f.Namespace).Replicas(replicas).
			RollingUpdate(intstr.FromInt32(1), intstr.FromInt32(0)).Request(corev1.ResourceCPU, "100m").Obj(), basicDeployment())
		if err == nil {
			a.app = apps.Deployment(d)
		}
	default:
		var set *appsv1.StatefulSet
		set, err = tryCreateStatefulSet(ctx, f, name, replicas, true, gangStatefulSet())
		if err == nil {
			a.app = apps.StatefulSet(set)
		}
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating %s", a.app)
}

func basicDeployment() *framework.DeploymentScheduling {
	return &framework.DeploymentScheduling{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Basic: &schedulingv1alpha3.WorkloadPodGroupBasicSchedulingPolicy{},
	}}
}

// act is the sequence's action.
func (a *sweepApp) act(ctx context.Context) {
	var err error
	switch a.q.Action {
	case actionCreate:
		a.create(ctx, a.q.To)
		return
	case actionScale:
		err = apps.TryScale(ctx, a.f, a.app, a.q.To)
	case actionRollout:
		if a.q.Kind == apps.KindDeployment {
			_, err = framework.Intent.UpdateDeployment(ctx, a.f.Namespace, a.app.Name, func(d *appsv1.Deployment, _ **framework.DeploymentScheduling) {
				builder.SetRevision(&d.Spec.Template, "2")
			})
		} else {
			_, err = framework.Intent.UpdateStatefulSet(ctx, a.f.Namespace, a.app.Name, func(s *appsv1.StatefulSet, _ **framework.StatefulSetScheduling) {
				builder.SetRevision(&s.Spec.Template, "2")
			})
		}
	case actionDelete:
		err = a.delete(ctx)
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "%s of %s", a.q.Action, a.app)
}

func (a *sweepApp) delete(ctx context.Context) error {
	opts := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
	if a.app.Kind == apps.KindDeployment {
		return a.f.ClientSet.AppsV1().Deployments(a.f.Namespace).Delete(ctx, a.app.Name, opts)
	}
	return a.f.ClientSet.AppsV1().StatefulSets(a.f.Namespace).Delete(ctx, a.app.Name, opts)
}

// remove deletes the trial's app and waits until its pods, Workloads and
// PodGroups are gone, so the next trial's counted writes are its own.
func (a *sweepApp) remove(ctx context.Context) {
	if err := a.delete(ctx); err != nil && !apierrors.IsNotFound(err) {
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "deleting %s", a.app)
	}
	gomega.Eventually(ctx, func(ctx context.Context) error {
		s := apps.Read(ctx, a.f, a.app)
		if len(s.Workloads)+len(s.PodGroups)+len(s.Pods)+len(s.Terminating)+len(s.ReplicaSets) > 0 {
			return fmt.Errorf("still there: %s", s)
		}
		return nil
	}).WithTimeout(a.f.Timeouts.Cleanup).WithPolling(a.f.Timeouts.Poll).Should(gomega.Succeed(), "waiting for %s to be gone", a.app)
}

// sweepSnapshot is the app's state with its pods' revision labels.
type sweepSnapshot struct {
	state apps.State
	// revision maps a live pod's name to its revision (pod-template-hash or
	// controller-revision-hash).
	revision map[string]string
	// finalRevision is the revision the app's pods must end at, and
	// finalGroup the live PodGroup of it ("" when there is none).
	finalRevision, finalGroup string
}

func (a *sweepApp) snapshot(ctx context.Context) sweepSnapshot {
	s := sweepSnapshot{state: apps.Read(ctx, a.f, a.app), revision: map[string]string{}}
	pods, err := framework.ListPods(ctx, apps.Pods(a.f, a.app))
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing the pods of %s", a.app)
	for _, p := range pods {
		s.revision[p.Name] = p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] + p.Labels[appsv1.ControllerRevisionHashLabelKey]
	}
	return s
}

// finalState is the app's state and nil once it is the one the KEPs
// require at replicas n (gone: the app was deleted, so nothing of it is
// left), else what differs.
func (a *sweepApp) finalState(ctx context.Context, n int32, gone bool) (sweepSnapshot, error) {
	s := a.snapshot(ctx)
	st := s.state
	if gone {
		if len(st.Workloads)+len(st.PodGroups)+len(st.Pods) > 0 {
			return s, fmt.Errorf("the deleted app's objects remain (the garbage collector removes them): %s", st)
		}
		return s, nil
	}
	var errs []error
	if len(st.Workloads) != 1 || st.Workloads[0].Terminating {
		errs = append(errs, errors.New("want exactly one live Workload"))
	}
	live := st.LivePodGroups()
	wantGroups := 1
	if n == 0 && a.q.Kind == apps.KindDeployment {
		wantGroups = 0 // KEP-6276: "scale-to-zero deletes the PodGroup"
	}
	if len(live) != wantGroups {
		errs = append(errs, fmt.Errorf("want %d live PodGroup(s)", wantGroups))
	}
	// The derived minCount: replicas for a gang, none for basic; at zero
	// replicas the KEPs leave it open (1 or the user's).
	if want := ptr.To(n); n > 0 || !a.q.Gang {
		if !a.q.Gang {
			want = ptr.To[int32](0)
		}
		if len(st.Workloads) == 1 && st.Workloads[0].MinCount != *want {
			errs = append(errs, fmt.Errorf("the Workload's minCount is %d, want %d", st.Workloads[0].MinCount, *want))
		}
		for _, pg := range live {
			if pg.MinCount != *want {
				errs = append(errs, fmt.Errorf("PodGroup %s's minCount is %d, want %d", pg.Name, pg.MinCount, *want))
			}
		}
	}
	if len(st.Pods) != int(n) || st.Running() != int(n) || len(st.Terminating) > 0 {
		errs = append(errs, fmt.Errorf("want %d pods, all running, none terminating", n))
	}
	if len(live) == 1 {
		s.finalGroup = live[0].Name
	}
	revision, owner, err := a.finalRevision(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	s.finalRevision = revision
	for _, p := range st.Pods {
		if len(live) == 1 && p.Group != s.finalGroup {
			errs = append(errs, fmt.Errorf("pod %s is in PodGroup %q, want %q", p.Name, p.Group, s.finalGroup))
		}
		if s.revision[p.Name] != revision {
			errs = append(errs, fmt.Errorf("pod %s is at revision %q, want %q", p.Name, s.revision[p.Name], revision))
		}
	}
	if owner != nil && s.finalGroup != "" {
		pg, err := a.f.ClientSet.SchedulingV1beta1().PodGroups(a.f.Namespace).Get(ctx, s.finalGroup, metav1.GetOptions{})
		if err == nil && !owner.Controls(pg) {
			errs = append(errs, fmt.Errorf("PodGroup %s is not the current ReplicaSet %s's", s.finalGroup, owner.Name))
		}
	}
	if len(errs) > 0 {
		return s, fmt.Errorf("%w: %s", errors.Join(errs...), st)
	}
	return s, nil
}

// finalRevision is the revision the app's pods must run: a Deployment's
// current ReplicaSet's pod-template-hash (that ReplicaSet is returned as the
// owner its PodGroup must have; every other must be at zero replicas), a
// StatefulSet's status.updateRevision once the rollout is complete.
func (a *sweepApp) finalRevision(ctx context.Context) (string, *apps.App, error) {
	ns := a.f.Namespace
	if a.app.Kind == apps.KindStatefulSet {
		set, err := a.f.ClientSet.AppsV1().StatefulSets(ns).Get(ctx, a.app.Name, metav1.GetOptions{})
		if err != nil {
			return "", nil, err
		}
		if set.Status.ObservedGeneration < set.Generation || set.Status.CurrentRevision != set.Status.UpdateRevision {
			return "", nil, fmt.Errorf("the rollout is not complete: observed generation %d of %d, current revision %s, update revision %s",
				set.Status.ObservedGeneration, set.Generation, set.Status.CurrentRevision, set.Status.UpdateRevision)
		}
		return set.Status.UpdateRevision, nil, nil
	}
	d, err := a.f.ClientSet.AppsV1().Deployments(ns).Get(ctx, a.app.Name, metav1.GetOptions{})
	if err != nil {
		return "", nil, err
	}
	var current *apps.App
	var revision string
	var errs []error
	for _, rs := range apps.ReplicaSets(ctx, a.f, a.app) {
		if rs.Annotations["deployment.kubernetes.io/revision"] == d.Annotations["deployment.kubernetes.io/revision"] {
			current = &apps.App{Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID}
			revision = rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
			if ptr.Deref(rs.Spec.Replicas, 1) != ptr.Deref(d.Spec.Replicas, 1) {
				errs = append(errs, fmt.Errorf("the current ReplicaSet %s wants %d replicas", rs.Name, ptr.Deref(rs.Spec.Replicas, 1)))
			}
		} else if ptr.Deref(rs.Spec.Replicas, 1) != 0 {
			errs = append(errs, fmt.Errorf("the old ReplicaSet %s wants %d replicas", rs.Name, ptr.Deref(rs.Spec.Replicas, 1)))
		}
	}
	if current == nil {
		errs = append(errs, fmt.Errorf("no ReplicaSet is at the Deployment's revision %q", d.Annotations["deployment.kubernetes.io/revision"]))
	}
	return revision, current, errors.Join(errs...)
}

// waitFinal waits for finalState, failing at once on a duplicate.
func (a *sweepApp) waitFinal(ctx context.Context, n int32, gone bool, dups *framework.DuplicateWatcher) sweepSnapshot {
	var s sweepSnapshot
	gomega.Eventually(ctx, func(ctx context.Context) error {
		if v := dups.Violations(); len(v) > 0 {
			return gomega.StopTrying(fmt.Sprintf("a duplicate Workload or PodGroup existed: %v", v))
		}
		var err error
		s, err = a.finalState(ctx, n, gone)
		return err
	}).WithTimeout(a.f.Timeouts.PodsBound).WithPolling(a.f.Timeouts.Poll).Should(gomega.Succeed(),
		"waiting for %s to reach the end of %s", a.app, a.q)
	return s
}

// expectCompleted: the recovery completed the partial state instead of
// replacing it. The Workload, and the final revision's live PodGroup, keep
// their UIDs; the final revision's pods that ran at the crash are kept (a
// StatefulSet's by ordinal, a Deployment's as many as the final replicas).
func (a *sweepApp) expectCompleted(partial, after sweepSnapshot) {
	ginkgo.GinkgoHelper()
	if a.q.Action == actionDelete {
		return
	}
	if len(partial.state.Workloads) == 1 {
		gomega.Expect(after.state.Workloads[0].UID).To(gomega.Equal(partial.state.Workloads[0].UID),
			"the Workload was recreated: partial %s, now %s", partial.state, after.state)
	}
	for _, pg := range partial.state.LivePodGroups() {
		if pg.Name == after.finalGroup {
			gomega.Expect(after.state.LivePodGroups()[0].UID).To(gomega.Equal(pg.UID),
				"the PodGroup %s was recreated: partial %s, now %s", pg.Name, partial.state, after.state)
		}
	}
	var ran []apps.Member // the final revision's pods that ran at the crash
	for _, p := range partial.state.Pods {
		if p.Phase == corev1.PodRunning && partial.revision[p.Name] == after.finalRevision {
			ran = append(ran, p)
		}
	}
	kept := map[types.UID]bool{}
	for _, p := range after.state.Pods {
		kept[p.UID] = true
	}
	want := min(len(ran), int(a.q.To))
	got := 0
	for _, p := range ran {
		if kept[p.UID] {
			got++
		} else if a.app.Kind == apps.KindStatefulSet && ordinal(p.Name) < int(a.q.To) {
			ginkgo.Fail(fmt.Sprintf("pod %s ran at the crash and was replaced: partial %s, now %s", p.Name, partial.state, after.state))
		}
	}
	gomega.Expect(got).To(gomega.BeNumerically(">=", want),
		"of the %d pods of the final revision running at the crash, %d are kept, want %d: partial %s, now %s", len(ran), got, want, partial.state, after.state)
}

// ordinal is a StatefulSet pod's ordinal (its name's last number).
func ordinal(pod string) int {
	n, err := strconv.Atoi(pod[strings.LastIndex(pod, "-")+1:])
	if err != nil {
		return -1
	}
	return n
}
