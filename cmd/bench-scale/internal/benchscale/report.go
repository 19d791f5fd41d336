package benchscale

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/workload-aware/apps-harness/framework"
)

// Mode is how the implementation's controllers run in a phase.
type Mode string

// The two modes of the one controller binary.
const (
	GatesOn  Mode = "gates-on"
	GatesOff Mode = "gates-off"
)

// Kind says whether a phase's objects carry scheduling intent.
type Kind string

const (
	// Gang objects carry gang intent (with the gates off, the controllers ignore it).
	Gang Kind = "gang"
	// Plain objects carry none.
	Plain Kind = "plain"
)

// Goals of issue 14, at the largest N.
const (
	GoalGangOverPlain = 1.15
	GoalCPUOnOverOff  = 1.3
	GoalSlope         = 1.1
	// Issue 26: what the implementation owns, gates on against off, for the
	// same gang objects (the scheduler's share reported apart).
	GoalImplementationOnOverOff = 1.10
)

// controllerWriters are the prefixes of the implementation's controllers in
// SchedulingWrites keys.
var controllerWriters = []string{"deployment-controller:", "replicaset-controller:", "statefulset-controller:"}

// Phase is one measured step: N Deployments and N/2 StatefulSets of one
// kind, created in one mode, until every pod is bound and the controllers
// are quiet.
type Phase struct {
	Mode Mode
	N    int
	Kind Kind
	// Deployments, StatefulSets and Pods created.
	Deployments, StatefulSets, Pods int
	// TimeToBound runs from the first create to the last pod bound.
	TimeToBound time.Duration
	// ObjectP50 and ObjectP99 are percentiles of each object's time from
	// its create to its last pod bound.
	ObjectP50, ObjectP99 time.Duration
	// PodsCreated runs from the first create to the controllers' last pod
	// create, PodGroupsFinal to their last write of a PodGroup's spec (zero
	// when they wrote none), both from the audit log's write history: the
	// part of the time to bound that the KEPs' implementation owns.
	PodsCreated, PodGroupsFinal time.Duration
	// Throughput is pods bound per second, first bind to last.
	Throughput float64
	// CPU is the controller process's user+system time over the phase.
	CPU time.Duration
	// PeakRSS is the highest resident set sampled during the phase.
	PeakRSS int64
	// Requests are the controllers' API requests during the phase.
	Requests Requests
	// RequestsByUser are Requests by the controller that made them.
	RequestsByUser Requests
	// SchedulerRequests are kube-scheduler's in the phase's namespace.
	SchedulerRequests Requests
	// Writes are the Workload and PodGroup writes in the phase's namespace.
	Writes framework.WriteCounts
	// Failed says why the phase did not complete; empty when it did.
	Failed string
}

// ImplementationDone is when the implementation had done its part: every
// pod created and every PodGroup final.
func (p Phase) ImplementationDone() time.Duration { return max(p.PodsCreated, p.PodGroupsFinal) }

// SchedulerShare is the rest of the time to bound: from the implementation
// done to the last pod bound, the scheduler's (and the kubelet-less nodes'
// binding) time.
func (p Phase) SchedulerShare() time.Duration { return max(p.TimeToBound-p.ImplementationDone(), 0) }

// Objects is the number of Deployments and StatefulSets.
func (p Phase) Objects() int { return p.Deployments + p.StatefulSets }

// ControllerWrites are the implementation's controllers' Workload and PodGroup writes.
func (p Phase) ControllerWrites() framework.WriteCounts {
	return p.Writes.Only(controllerWriters...)
}

// WantWrites are the writes KEP-6276 and KEP-6277 list for creating the
// phase's objects: with the gates on, one Workload and one PodGroup per gang
// object, written by the controller of that object (the Deployment's
// Workload by the Deployment controller, its PodGroup by the ReplicaSet
// controller); nothing for plain objects, and nothing with the gates off.
func (p Phase) WantWrites() framework.WriteCounts {
	want := framework.WriteCounts{}
	if p.Mode != GatesOn || p.Kind != Gang {
		return want
	}
	add := func(key string, n int) {
		if n > 0 {
			want[key] = float64(n)
		}
	}
	add("deployment-controller: create workloads", p.Deployments)
	add("replicaset-controller: create podgroups", p.Deployments)
	add("statefulset-controller: create workloads", p.StatefulSets)
	add("statefulset-controller: create podgroups", p.StatefulSets)
	return want
}

// WritesExact reports whether the controllers wrote exactly WantWrites.
func (p Phase) WritesExact() bool { return p.ControllerWrites().String() == p.WantWrites().String() }

// Results are every phase of a run.
type Results []Phase

func (r Results) find(mode Mode, n int, kind Kind) (Phase, bool) {
	for _, p := range r {
		if p.Mode == mode && p.N == n && p.Kind == kind && p.Failed == "" {
			return p, true
		}
	}
	return Phase{}, false
}

// Ns are the N measured, ascending.
func (r Results) Ns() []int {
	var out []int
	for _, p := range r {
		if !slices.Contains(out, p.N) {
			out = append(out, p.N)
		}
	}
	slices.Sort(out)
	return out
}

// Cost is one mode's total at one N: the gang and the plain phase together,
// the same objects in both modes.
type Cost struct {
	CPU      time.Duration
	Requests int
	// TimeToBound is the gang phase's.
	TimeToBound time.Duration
}

// CostAt returns mode's cost at n; false unless both phases completed.
func (r Results) CostAt(mode Mode, n int) (Cost, bool) {
	g, ok1 := r.find(mode, n, Gang)
	p, ok2 := r.find(mode, n, Plain)
	if !ok1 || !ok2 {
		return Cost{}, false
	}
	return Cost{CPU: g.CPU + p.CPU, Requests: g.Requests.Total() + p.Requests.Total(), TimeToBound: g.TimeToBound}, true
}

// GangOverPlain is mode's gang/plain time-to-bound ratio at n.
func (r Results) GangOverPlain(mode Mode, n int) (float64, bool) {
	g, ok1 := r.find(mode, n, Gang)
	p, ok2 := r.find(mode, n, Plain)
	if !ok1 || !ok2 || p.TimeToBound <= 0 {
		return 0, false
	}
	return float64(g.TimeToBound) / float64(p.TimeToBound), true
}

// ImplementationOnOverOff is the gates-on/gates-off ratio of kind's time to
// the implementation done (every pod created, every PodGroup final) at n.
func (r Results) ImplementationOnOverOff(n int, kind Kind) (float64, bool) {
	on, ok1 := r.find(GatesOn, n, kind)
	off, ok2 := r.find(GatesOff, n, kind)
	if !ok1 || !ok2 || off.ImplementationDone() <= 0 {
		return 0, false
	}
	return float64(on.ImplementationDone()) / float64(off.ImplementationDone()), true
}

// OnOverOff are the gates-on/gates-off ratios of CPU and requests at n.
func (r Results) OnOverOff(n int) (cpu, requests float64, ok bool) {
	on, ok1 := r.CostAt(GatesOn, n)
	off, ok2 := r.CostAt(GatesOff, n)
	if !ok1 || !ok2 || off.CPU <= 0 || off.Requests <= 0 {
		return 0, 0, false
	}
	return float64(on.CPU) / float64(off.CPU), float64(on.Requests) / float64(off.Requests), true
}

// Slope is the log-log slope of metric over the N where mode has a cost.
func (r Results) Slope(mode Mode, metric func(Cost) float64) (float64, error) {
	var xs, ys []float64
	for _, n := range r.Ns() {
		if c, ok := r.CostAt(mode, n); ok {
			xs, ys = append(xs, float64(n)), append(ys, metric(c))
		}
	}
	return LogLogSlope(xs, ys)
}

// Metrics the slopes are taken of.
var (
	CPUSeconds  = func(c Cost) float64 { return c.CPU.Seconds() }
	RequestsOf  = func(c Cost) float64 { return float64(c.Requests) }
	BoundSecond = func(c Cost) float64 { return c.TimeToBound.Seconds() }
)

// Meta describes the run for the report's header.
type Meta struct {
	Started   time.Time
	Took      time.Duration
	Nodes     string
	Replicas  int
	Host      string
	Notes     []string
	PlotFile  string
	Profiles  []string
	Requested []int
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**not met**"
}

// Render writes the Markdown report: the phases, the ratios, the slopes,
// the goals, and each phase's requests by verb and resource.
func Render(r Results, m Meta) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# bench-scale: the implementation's controllers at scale, gates on and off\n\n")
	fmt.Fprintf(&b, "Started %s, took %s. Cluster: %s. Each object has %d replicas; per N: N Deployments and N/2 StatefulSets (Parallel), first with gang intent, then the same without. Host: %s.\n\n",
		m.Started.UTC().Format(time.RFC3339), m.Took.Round(time.Second), m.Nodes, m.Replicas, m.Host)
	for _, n := range m.Notes {
		fmt.Fprintf(&b, "* %s\n", n)
	}
	if len(m.Notes) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("## Phases\n\n")
	b.WriteString("Time to bound: first create to last pod bound. p50/p99: per object, its create to its last pod bound. Scheduler: pods bound per second, first bind to last. CPU: the controller process's user+system seconds over the phase (to all bound and the controllers quiet). Peak RSS: highest sampled. Requests: the controllers' users', from the audit log. Writes: the controllers' Workload and PodGroup writes per object.\n\n")
	b.WriteString("| mode | N | kind | objects | pods | time to bound (s) | p50 (s) | p99 (s) | scheduler (pods/s) | CPU (s) | peak RSS (MiB) | requests | writes per object | writes = KEP |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range r {
		if p.Failed != "" {
			fmt.Fprintf(&b, "| %s | %d | %s | %d | %d | failed: %s | | | | | | | | |\n", p.Mode, p.N, p.Kind, p.Objects(), p.Pods, p.Failed)
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %d | %d | %s | %s | %s | %.0f | %s | %.0f | %d | %s | %s |\n",
			p.Mode, p.N, p.Kind, p.Objects(), p.Pods, secs(p.TimeToBound), secs(p.ObjectP50), secs(p.ObjectP99), p.Throughput,
			secs(p.CPU), float64(p.PeakRSS)/(1<<20), p.Requests.Total(), perObject(p), yesNo(p.WritesExact()))
	}
	b.WriteString("\n## Ratios\n\n")
	b.WriteString("| N | gang/plain time to bound, gates on | gang/plain, gates off (noise floor) | CPU on/off | requests on/off |\n|---|---|---|---|---|\n")
	for _, n := range r.Ns() {
		gOn, ok1 := r.GangOverPlain(GatesOn, n)
		gOff, ok2 := r.GangOverPlain(GatesOff, n)
		cpu, req, ok3 := r.OnOverOff(n)
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", n, ratio(gOn, ok1), ratio(gOff, ok2), ratio(cpu, ok3), ratio(req, ok3))
	}
	b.WriteString("\n## The implementation's share and the scheduler's\n\n")
	b.WriteString("From the audit log's write history, first create to the controllers' last pod create (pods created) and to their last write of a PodGroup's spec (PodGroups final): the implementation is done at the later of the two. The scheduler's share is the rest of the time to bound. The same objects, gates on against gates off.\n\n")
	b.WriteString("| N | kind | pods created on / off (s) | PodGroups final on (s) | implementation done on / off (s) | on/off | scheduler's share on / off (s) |\n|---|---|---|---|---|---|---|\n")
	for _, n := range r.Ns() {
		for _, kind := range []Kind{Gang, Plain} {
			on, ok1 := r.find(GatesOn, n, kind)
			off, ok2 := r.find(GatesOff, n, kind)
			if !ok1 || !ok2 {
				continue
			}
			v, ok := r.ImplementationOnOverOff(n, kind)
			fmt.Fprintf(&b, "| %d | %s | %s / %s | %s | %s / %s | %s | %s / %s |\n", n, kind, secs(on.PodsCreated), secs(off.PodsCreated), secs(on.PodGroupsFinal),
				secs(on.ImplementationDone()), secs(off.ImplementationDone()), ratio(v, ok), secs(on.SchedulerShare()), secs(off.SchedulerShare()))
		}
	}
	b.WriteString("\n## Growth (log-log slope against N; 1 is linear)\n\n| mode | CPU | requests | gang time to bound |\n|---|---|---|---|\n")
	slopes := map[Mode][3]string{}
	for _, mode := range []Mode{GatesOn, GatesOff} {
		var row [3]string
		for i, metric := range []func(Cost) float64{CPUSeconds, RequestsOf, BoundSecond} {
			s, err := r.Slope(mode, metric)
			row[i] = "n/a"
			if err == nil {
				row[i] = fmt.Sprintf("%.2f", s)
			}
		}
		slopes[mode] = row
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mode, row[0], row[1], row[2])
	}
	b.WriteString("\n## Goals\n\n")
	for _, g := range Goals(r) {
		fmt.Fprintf(&b, "* %s\n", g)
	}
	if m.PlotFile != "" {
		fmt.Fprintf(&b, "\n![time to bound, CPU, and the implementation's and the scheduler's shares against N, both modes](%s)\n", m.PlotFile)
	}
	if len(m.Profiles) > 0 {
		fmt.Fprintf(&b, "\nCPU profiles of the controller process (`go tool pprof -top <file>`): %s\n", strings.Join(m.Profiles, ", "))
	}
	b.WriteString("\n## Requests by verb and resource\n\nThe controllers' (all namespaces), by controller (each client has a rate limit of its own), and kube-scheduler's in the phase's namespace per pod (what its client rate limit spends on each pod).\n\n| mode | N | kind | controllers | by controller | kube-scheduler per pod |\n|---|---|---|---|---|---|\n")
	for _, p := range r {
		if p.Failed == "" {
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", p.Mode, p.N, p.Kind, p.Requests, p.RequestsByUser, perPod(p.SchedulerRequests, p.Pods))
		}
	}
	b.WriteString("\n## Workload and PodGroup writes (all writers)\n\n| mode | N | kind | measured | the KEPs' list |\n|---|---|---|---|---|\n")
	for _, p := range r {
		if p.Failed == "" {
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", p.Mode, p.N, p.Kind, p.Writes, p.WantWrites())
		}
	}
	return b.String()
}

// Goals judges the goals at the largest N with both modes measured
// (writes: at every N), one line each.
func Goals(r Results) []string {
	var largest int
	for _, n := range r.Ns() {
		if _, _, ok := r.OnOverOff(n); ok {
			largest = n
		}
	}
	var out []string
	if largest == 0 {
		out = append(out, "no N completed in both modes: ratios and slopes not judged")
	} else {
		impl, ok := r.ImplementationOnOverOff(largest, Gang)
		out = append(out, fmt.Sprintf("gates-on/gates-off time to all pods created and PodGroups final, gang objects, at N=%d: %s (goal at most %.2f): %s",
			largest, ratio(impl, ok), GoalImplementationOnOverOff, verdict(ok && impl <= GoalImplementationOnOverOff)))
		g, ok := r.GangOverPlain(GatesOn, largest)
		out = append(out, fmt.Sprintf("gang/plain time to all bound at N=%d: %s (goal at most %.2f): %s", largest, ratio(g, ok), GoalGangOverPlain, verdict(ok && g <= GoalGangOverPlain)))
		cpu, _, _ := r.OnOverOff(largest)
		out = append(out, fmt.Sprintf("gates-on/gates-off controller CPU at N=%d: %.2f (goal at most %.2f): %s", largest, cpu, GoalCPUOnOverOff, verdict(cpu <= GoalCPUOnOverOff)))
		for _, m := range []struct {
			name   string
			metric func(Cost) float64
		}{{"CPU", CPUSeconds}, {"requests", RequestsOf}} {
			s, err := r.Slope(GatesOn, m.metric)
			if err != nil {
				out = append(out, fmt.Sprintf("growth of gates-on %s: not judged (%v)", m.name, err))
				continue
			}
			out = append(out, fmt.Sprintf("growth of gates-on %s against N: slope %.2f (goal at most %.2f): %s", m.name, s, GoalSlope, verdict(s <= GoalSlope)))
		}
	}
	var wrong []string
	judged := 0
	for _, p := range r {
		if p.Failed != "" {
			continue
		}
		judged++
		if !p.WritesExact() {
			wrong = append(wrong, fmt.Sprintf("%s N=%d %s: %s, want %s", p.Mode, p.N, p.Kind, p.ControllerWrites(), p.WantWrites()))
		}
	}
	out = append(out, fmt.Sprintf("controller Workload/PodGroup writes equal the KEPs' list in %d of %d phases: %s", judged-len(wrong), judged, verdict(len(wrong) == 0 && judged > 0)))
	for _, w := range wrong {
		out = append(out, "  wrong: "+w)
	}
	return out
}

func ratio(v float64, ok bool) string {
	if !ok {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", v)
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// perObject renders the controllers' writes divided by the phase's objects,
// e.g. "create workloads=1, create podgroups=1"; "0" when none.
func perObject(p Phase) string {
	w := p.ControllerWrites()
	if len(w) == 0 {
		return "0"
	}
	byVerb := map[string]float64{}
	for k, v := range w {
		_, verbRes, _ := strings.Cut(k, ": ")
		byVerb[verbRes] += v
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(byVerb)) {
		parts = append(parts, fmt.Sprintf("%s=%.3g", k, byVerb[k]/float64(max(p.Objects(), 1))))
	}
	return strings.Join(parts, ", ")
}

// perPod renders requests divided by pods, e.g. "create pods/binding=1, patch pods/status=0.5".
func perPod(r Requests, pods int) string {
	if len(r) == 0 || pods == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(r))
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%.2f", k, float64(r[k])/float64(pods)))
	}
	return strings.Join(parts, ", ")
}
