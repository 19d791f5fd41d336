package benchscale

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workload-aware/apps-harness/framework"
)

// phase builds a completed phase whose cost is linear in n (times scale).
func phase(mode Mode, n int, kind Kind, bound time.Duration, cpuPerObject time.Duration, requestsPerObject int) Phase {
	p := Phase{Mode: mode, N: n, Kind: kind, Deployments: n, StatefulSets: n / 2, Pods: 8 * (n + n/2),
		SchedulerRequests: Requests{"create pods/binding": 8 * (n + n/2), "patch pods/status": 4 * (n + n/2)},
		TimeToBound:       bound, ObjectP50: bound / 2, ObjectP99: bound, Throughput: 100,
		CPU: time.Duration(n+n/2) * cpuPerObject, PeakRSS: 64 << 20,
		Requests: Requests{"create pods": 8 * (n + n/2), "update replicasets/status": requestsPerObject*(n+n/2) - 8*(n+n/2)},
		Writes:   framework.WriteCounts{}}
	for k, v := range p.WantWrites() {
		p.Writes[k] = v
	}
	// Every pod created at 60% of the time to bound; PodGroups, where the
	// controllers write them, final at half of it.
	p.PodsCreated = bound * 6 / 10
	if mode == GatesOn && kind == Gang {
		p.PodGroupsFinal = bound / 2
	}
	return p
}

func sample() Results {
	var r Results
	for _, n := range []int{25, 50, 100} {
		r = append(r,
			phase(GatesOn, n, Gang, 11*time.Second, 12*time.Millisecond, 20),
			phase(GatesOn, n, Plain, 10*time.Second, 10*time.Millisecond, 18),
			phase(GatesOff, n, Gang, 10*time.Second, 10*time.Millisecond, 18),
			phase(GatesOff, n, Plain, 10*time.Second, 10*time.Millisecond, 18))
	}
	return r
}

func TestWantWrites(t *testing.T) {
	p := Phase{Mode: GatesOn, Kind: Gang, Deployments: 25, StatefulSets: 12}
	want := "deployment-controller: create workloads=25, replicaset-controller: create podgroups=25, statefulset-controller: create podgroups=12, statefulset-controller: create workloads=12"
	if got := p.WantWrites().String(); got != want {
		t.Errorf("gates-on gang: %s\nwant %s", got, want)
	}
	for _, p := range []Phase{{Mode: GatesOn, Kind: Plain, Deployments: 25}, {Mode: GatesOff, Kind: Gang, Deployments: 25}} {
		if got := p.WantWrites().String(); got != "none" {
			t.Errorf("%s %s: %s, want none", p.Mode, p.Kind, got)
		}
	}
}

func TestWritesExactIgnoresOtherWritersButNotExtraControllerWrites(t *testing.T) {
	p := phase(GatesOn, 25, Gang, time.Second, time.Millisecond, 10)
	p.Writes["generic-garbage-collector: delete podgroups"] = 3
	if !p.WritesExact() {
		t.Errorf("another component's writes made the controllers' inexact: %s", p.Writes)
	}
	p.Writes["replicaset-controller: update podgroups"] = 1
	if p.WritesExact() {
		t.Error("one extra update by the ReplicaSet controller went unnoticed")
	}
	q := phase(GatesOn, 25, Gang, time.Second, time.Millisecond, 10)
	q.Writes["deployment-controller: create workloads"] = 24
	if q.WritesExact() {
		t.Error("a missing Workload create went unnoticed")
	}
}

func TestRatiosAndSlopes(t *testing.T) {
	r := sample()
	if g, ok := r.GangOverPlain(GatesOn, 100); !ok || math.Abs(g-1.1) > 1e-9 {
		t.Errorf("gang/plain = %v, %v; want 1.1", g, ok)
	}
	cpu, req, ok := r.OnOverOff(50)
	// on: 12+10 per object, off: 10+10; requests on 20+18, off 18+18.
	if !ok || math.Abs(cpu-22.0/20) > 1e-9 || math.Abs(req-38.0/36) > 1e-9 {
		t.Errorf("on/off = cpu %v, requests %v, %v; want 1.1, 1.056", cpu, req, ok)
	}
	s, err := r.Slope(GatesOn, CPUSeconds)
	if err != nil || math.Abs(s-1) > 0.02 {
		t.Errorf("CPU slope %v, %v; want 1", s, err)
	}
	// A phase that failed does not count, and leaves its N out of the ratios.
	r[len(r)-1].Failed = "timed out"
	if _, _, ok := r.OnOverOff(100); ok {
		t.Error("a failed phase still gave an on/off ratio")
	}
}

func TestGoals(t *testing.T) {
	r := sample()
	goals := strings.Join(Goals(r), "\n")
	for _, want := range []string{
		"gang/plain time to all bound at N=100: 1.10 (goal at most 1.15): met",
		"gates-on/gates-off controller CPU at N=100: 1.10 (goal at most 1.30): met",
		"growth of gates-on CPU against N: slope 1.01 (goal at most 1.10): met",
		"writes equal the KEPs' list in 12 of 12 phases: met",
		"gates-on/gates-off time to all pods created and PodGroups final, gang objects, at N=100: 1.10 (goal at most 1.10): met",
	} {
		if !strings.Contains(goals, want) {
			t.Errorf("goals lack %q:\n%s", want, goals)
		}
	}
	// Quadratic CPU with the gates on, slow gangs, and a wrong write.
	for i := range r {
		if r[i].Mode == GatesOn {
			r[i].CPU = time.Duration(r[i].N*r[i].N) * time.Millisecond
		}
		if r[i].Mode == GatesOn && r[i].Kind == Gang {
			r[i].TimeToBound = 20 * time.Second
			r[i].PodGroupsFinal = 9 * time.Second // after the pods: the PodGroups are what is late
		}
	}
	r[0].Writes["replicaset-controller: update podgroups"] = 1
	goals = strings.Join(Goals(r), "\n")
	for _, want := range []string{
		"gang/plain time to all bound at N=100: 2.00 (goal at most 1.15): **not met**",
		"controller CPU at N=100: 6.67 (goal at most 1.30): **not met**",
		"growth of gates-on CPU against N: slope 2.00 (goal at most 1.10): **not met**",
		"in 11 of 12 phases: **not met**",
		"wrong: gates-on N=25 gang",
		"PodGroups final, gang objects, at N=100: 1.50 (goal at most 1.10): **not met**",
	} {
		if !strings.Contains(goals, want) {
			t.Errorf("goals lack %q:\n%s", want, goals)
		}
	}
}

func TestRenderTable(t *testing.T) {
	r := sample()
	r = append(r, Phase{Mode: GatesOn, N: 200, Kind: Gang, Deployments: 200, StatefulSets: 100, Failed: "not all pods bound within 5m0s"})
	out := Render(r, Meta{Started: time.Unix(0, 0), Nodes: "128 kwok nodes", Replicas: 8, PlotFile: "bench-scale.png"})
	for _, want := range []string{
		"| gates-on | 25 | gang | 37 | 296 | 11.00 | 5.50 | 11.00 | 100 | 0.44 | 64 | 740 | create podgroups=1, create workloads=1 | yes |",
		"| gates-off | 25 | plain | 37 | 296 | 10.00 |",
		"| gates-on | 200 | gang | 300 | 0 | failed: not all pods bound within 5m0s |",
		"| 50 | 1.10 | 1.00 | 1.10 | 1.06 |",
		"| gates-on | 1.01 | 1.01 | 0.00 |",
		"| 25 | gang | 6.60 / 6.00 | 5.50 | 6.60 / 6.00 | 1.10 | 4.40 / 4.00 |",
		"| 25 | plain | 6.00 / 6.00 | 0.00 | 6.00 / 6.00 | 1.00 | 4.00 / 4.00 |",
		"![time to bound, CPU, and the implementation's and the scheduler's shares against N, both modes](bench-scale.png)",
		"| gates-on | 25 | gang | update replicasets/status=444, create pods=296 | none | create pods/binding=1.00, patch pods/status=0.50 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestPlotWritesBothFormats draws the sample, and a single N (quick mode),
// into PNG and SVG files that start as those formats do.
func TestPlotWritesBothFormats(t *testing.T) {
	dir := t.TempDir()
	quick := Results{}
	for _, p := range sample() {
		if p.N == 25 {
			quick = append(quick, p)
		}
	}
	for name, r := range map[string]Results{"full": sample(), "quick": quick} {
		for ext, magic := range map[string]string{".png": "\x89PNG", ".svg": "<?xml"} {
			path := filepath.Join(dir, name+ext)
			if err := Plot(r, path); err != nil {
				t.Fatalf("%s%s: %v", name, ext, err)
			}
			data, err := os.ReadFile(path)
			if err != nil || !strings.HasPrefix(string(data), magic) {
				t.Errorf("%s%s: %d bytes, %v; want a file starting %q", name, ext, len(data), err, magic)
			}
		}
	}
	if err := Plot(sample(), filepath.Join(dir, "x.gif")); err == nil {
		t.Error("a .gif path gave no error")
	}
}

func TestLogTicksLabelLessThanADecade(t *testing.T) {
	var got []string
	for _, tk := range (logTicks{}).Ticks(3, 30) {
		got = append(got, tk.Label)
	}
	if strings.Join(got, ",") != "5,10,20" {
		t.Errorf("ticks in [3,30]: %v, want 5,10,20", got)
	}
	got = nil
	for _, tk := range (logTicks{}).Ticks(32.8, 49.13) {
		got = append(got, tk.Label)
	}
	if strings.Join(got, ",") != "32.8,49.1" {
		t.Errorf("ticks in [32.8,49.13], no round value inside: %v, want the ends", got)
	}
	got = nil
	for _, tk := range (nTicks{25, 50, 100, 200}).Ticks(20, 120) {
		got = append(got, tk.Label)
	}
	if strings.Join(got, ",") != "25,50,100" {
		t.Errorf("N ticks in [20,120]: %v, want 25,50,100", got)
	}
}

// TestPlotWithoutCompletedPhaseIsAnError: a run whose every phase failed has
// nothing to draw on log axes; Plot says so instead of panicking.
func TestPlotWithoutCompletedPhaseIsAnError(t *testing.T) {
	r := Results{{Mode: GatesOn, N: 25, Kind: Gang, Failed: "denied"}}
	if err := Plot(r, filepath.Join(t.TempDir(), "p.png")); err == nil {
		t.Error("no error for a plot without data")
	}
}
