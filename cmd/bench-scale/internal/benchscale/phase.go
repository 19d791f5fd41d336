package benchscale

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// createWorkers is how many objects are created at once: enough that the
// creates take a fraction of the phase, few enough for 2 cores.
const createWorkers = 8

// Quiet: the controllers are done with a phase when they have made no
// request but reads, watches and lease renewals for quietFor (bounded by
// quietMax: a controller that never stops would still end the phase).
const (
	quietFor = 3 * time.Second
	quietMax = 90 * time.Second
)

// bindTracker records, from a pod watch, when each pod was first seen
// bound and when each object (by its pods' app label) had all its pods bound.
type bindTracker struct {
	mu       sync.Mutex
	replicas int
	seen     map[string]bool
	perApp   map[string]int
	appDone  map[string]time.Time
	first    time.Time
	last     time.Time
	bound    int
	changed  chan struct{}
}

func newBindTracker(replicas int) *bindTracker {
	return &bindTracker{replicas: replicas, seen: map[string]bool{}, perApp: map[string]int{}, appDone: map[string]time.Time{}, changed: make(chan struct{}, 1)}
}

func (t *bindTracker) observe(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen[pod.Name] {
		return
	}
	t.seen[pod.Name] = true
	if t.bound == 0 {
		t.first = now
	}
	t.bound++
	t.last = now
	app := pod.Labels[builder.AppLabel]
	t.perApp[app]++
	if t.perApp[app] == t.replicas {
		t.appDone[app] = now
	}
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

func (t *bindTracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bound
}

// runPhase creates one phase's objects in a namespace of their own, waits
// until every pod is bound and the controllers are quiet, measures, and
// deletes the namespace. A phase that does not complete is returned with
// Failed set; the error says whether the run can go on (nil) or not.
func (e *env) runPhase(ctx context.Context, mode Mode, n int, kind Kind, profile string, expected time.Duration) (Phase, error) {
	o := e.o
	p := Phase{Mode: mode, N: n, Kind: kind, Deployments: n, StatefulSets: n / 2}
	p.Pods = o.Replicas * p.Objects()
	ns := fmt.Sprintf("bench-%s-n%d-%s", mode, n, kind)
	o.Logf("phase %s N=%d %s: %d Deployments, %d StatefulSets, %d pods in namespace %s", mode, n, kind, p.Deployments, p.StatefulSets, p.Pods, ns)
	fail := func(format string, args ...any) (Phase, error) {
		p.Failed = fmt.Sprintf(format, args...)
		o.Logf("phase %s N=%d %s failed: %s", mode, n, kind, p.Failed)
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.PhaseTimeout)
		defer cancel()
		if err := e.deleteNamespace(cleanup, ns); err != nil {
			return p, fmt.Errorf("cleaning up after a failed phase: %w", err)
		}
		return p, ctx.Err() // a run out of budget or interrupted stops; otherwise the next phase runs
	}
	pid, err := e.controllerPID()
	if err != nil {
		return p, err
	}
	if err := e.createNamespace(ctx, ns); err != nil {
		return fail("creating namespace: %v", err)
	}

	tracker := newBindTracker(o.Replicas)
	factory := informers.NewSharedInformerFactoryWithOptions(e.client, 0, informers.WithNamespace(ns))
	podInf := factory.Core().V1().Pods().Informer()
	if _, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    tracker.observe,
		UpdateFunc: func(_, obj any) { tracker.observe(obj) },
	}); err != nil {
		return fail("watching pods: %v", err)
	}
	stopInformers := make(chan struct{})
	defer close(stopInformers)
	factory.Start(stopInformers)
	if !cache.WaitForCacheSync(ctx.Done(), podInf.HasSynced) {
		return fail("pod watch did not sync")
	}

	// The previous phase's cleanup, or the restart, is over before we measure.
	audit := e.cluster.AuditLogPath()
	if err := waitQuiet(ctx, audit); err != nil {
		return fail("controllers not quiet before the phase: %v", err)
	}
	before, err := ReadProc(pid)
	if err != nil {
		return fail("reading the controller's /proc: %v", err)
	}
	auditStart := FileSize(audit)
	sampler := sampleRSS(pid)

	var profileDone <-chan error
	if profile != "" {
		d := min(max(expected+10*time.Second, 15*time.Second), 3*time.Minute)
		o.Logf("capturing a %s CPU profile into %s", d.Round(time.Second), profile)
		profileDone = e.captureProfile(ctx, profile, d)
	}

	t0 := time.Now()
	created, err := e.createObjects(ctx, ns, n, kind)
	if err != nil {
		sampler.stop()
		return fail("creating objects: %v", err)
	}
	if err := waitBound(ctx, tracker, p.Pods, o.PhaseTimeout); err != nil {
		sampler.stop()
		return fail("%d of %d pods bound: %v", tracker.count(), p.Pods, err)
	}
	if err := waitQuiet(ctx, audit); err != nil {
		sampler.stop()
		return fail("controllers not quiet after the phase: %v", err)
	}
	after, err := ReadProc(pid)
	peak := sampler.stop()
	if err != nil {
		return fail("reading the controller's /proc: %v", err)
	}
	summary, err := ReadAuditFrom(audit, auditStart, AuditFilter{Users: ControllerUsers, Scheduler: SchedulerUser, Namespace: ns})
	if err != nil {
		return fail("reading the audit log: %v", err)
	}
	if FileSize(audit) < auditStart {
		return fail("the apiserver rotated its audit log during the phase: requests and writes not counted")
	}

	p.PodsCreated, p.PodGroupsFinal = since(t0, summary.LastPodCreate), since(t0, summary.LastPodGroupWrite)
	tracker.mu.Lock()
	p.TimeToBound = tracker.last.Sub(t0)
	if span := tracker.last.Sub(tracker.first).Seconds(); span > 0 {
		p.Throughput = float64(tracker.bound) / span
	}
	var perObject []time.Duration
	for name, at := range created {
		perObject = append(perObject, tracker.appDone[name].Sub(at))
	}
	tracker.mu.Unlock()
	p.ObjectP50, p.ObjectP99 = Percentile(perObject, 50), Percentile(perObject, 99)
	p.CPU = after.CPU - before.CPU
	p.PeakRSS = max(peak, after.RSS)
	p.Requests, p.RequestsByUser, p.SchedulerRequests, p.Writes = summary.Requests, summary.ByUser, summary.SchedulerRequests, summary.SchedulingWrites
	o.Logf("phase %s N=%d %s: all %d pods bound in %s (p50 %s, p99 %s; pods created in %s, PodGroups final in %s), CPU %s, %d requests, writes %s",
		mode, n, kind, p.Pods, p.TimeToBound.Round(time.Millisecond), p.ObjectP50.Round(time.Millisecond), p.ObjectP99.Round(time.Millisecond),
		p.PodsCreated.Round(time.Millisecond), p.PodGroupsFinal.Round(time.Millisecond), p.CPU, p.Requests.Total(), p.ControllerWrites())

	if profileDone != nil {
		if err := <-profileDone; err != nil {
			o.Logf("CPU profile: %v", err)
		}
	}
	if err := e.deleteNamespace(ctx, ns); err != nil {
		return p, err
	}
	return p, nil
}

// since is at's time after t0 (the API server and this process share the
// host's clock); zero when at is.
func since(t0, at time.Time) time.Duration {
	if at.IsZero() {
		return 0
	}
	return at.Sub(t0)
}

// createObjects creates the phase's Deployments and StatefulSets through
// the suites' intent seam, createWorkers at a time, and returns when each
// create was sent (keyed by name, which is also its pods' app label).
func (e *env) createObjects(ctx context.Context, ns string, n int, kind Kind) (map[string]time.Time, error) {
	var dIntent *framework.DeploymentScheduling
	var sIntent *framework.StatefulSetScheduling
	if kind == Gang {
		// Gang with no minCount: the controllers derive it from the replicas
		// (a user-set minCount is refused for StatefulSets in Alpha).
		gang := func() *schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy {
			return &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{}}
		}
		dIntent = &framework.DeploymentScheduling{SchedulingPolicy: gang()}
		sIntent = &framework.StatefulSetScheduling{SchedulingPolicy: gang()}
	}
	replicas := int32(e.o.Replicas)
	type job struct {
		name   string
		create func(context.Context) error
	}
	var jobs []job
	for i := range n {
		name := fmt.Sprintf("d-%03d", i)
		// Recreate: the admission refuses a gang that a rolling update would
		// split across two revisions; plain ones get the same, like for like.
		d := builder.Deployment(name, ns).Replicas(replicas).Recreate().Request(corev1.ResourceCPU, podCPU).Obj()
		jobs = append(jobs, job{name, func(ctx context.Context) error { _, err := e.intent.CreateDeployment(ctx, d, dIntent); return err }})
		if i%2 == 1 {
			name := fmt.Sprintf("s-%03d", i/2)
			s := builder.StatefulSet(name, ns).Replicas(replicas).Parallel().Request(corev1.ResourceCPU, podCPU).Obj()
			jobs = append(jobs, job{name, func(ctx context.Context) error { _, err := e.intent.CreateStatefulSet(ctx, s, sIntent); return err }})
		}
	}
	var mu sync.Mutex
	created := map[string]time.Time{}
	var firstErr error
	next := make(chan job)
	var wg sync.WaitGroup
	for range createWorkers {
		wg.Go(func() {
			for j := range next {
				at := time.Now()
				err := j.create(ctx)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", j.name, err)
				}
				created[j.name] = at
				mu.Unlock()
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	return created, firstErr
}

// waitBound waits until want pods have been seen bound.
func waitBound(ctx context.Context, t *bindTracker, want int, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for t.count() < want {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("not all bound within %s", timeout)
		case <-t.changed:
		}
	}
	return nil
}

// waitQuiet reads the audit log as it grows until the controllers have made
// no request that changes anything (reads, watches and lease renewals
// aside) for quietFor.
func waitQuiet(ctx context.Context, path string) error {
	offset := FileSize(path)
	lastBusy := time.Now()
	deadline := time.Now().Add(quietMax)
	for time.Since(lastBusy) < quietFor {
		if time.Now().After(deadline) {
			return fmt.Errorf("still writing after %s", quietMax)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		busy, next, err := busyRequests(path, offset)
		if err != nil {
			return err
		}
		offset = next
		if busy > 0 {
			lastBusy = time.Now()
		}
	}
	return nil
}

// busyRequests counts the complete audit lines from offset that are
// writes other than lease renewals, and returns the offset after the last
// complete line.
func busyRequests(path string, offset int64) (int, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, offset, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, offset, err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	busy := 0
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			// A partial last line is read again next time.
			return busy, offset, nil
		}
		offset += int64(len(line))
		var ev framework.AuditEvent
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		switch ev.Verb {
		case "get", "list", "watch":
			continue
		}
		if ev.ObjectRef.Resource == "leases" {
			continue
		}
		busy++
	}
}

// rssSampler samples the process's resident set until stopped.
type rssSampler struct {
	stopCh chan struct{}
	peak   chan int64
}

func sampleRSS(pid int) *rssSampler {
	s := &rssSampler{stopCh: make(chan struct{}), peak: make(chan int64, 1)}
	go func() {
		var peak int64
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			if ps, err := ReadProc(pid); err == nil {
				peak = max(peak, ps.RSS)
			}
			select {
			case <-s.stopCh:
				s.peak <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the highest RSS seen.
func (s *rssSampler) stop() int64 {
	close(s.stopCh)
	return <-s.peak
}
