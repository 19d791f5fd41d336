package framework

import (
	"testing"
	"time"
)

func TestDerive(t *testing.T) {
	base := DefaultTimeouts()
	t.Run("a fast cluster keeps the bounds, and the window covers the longest permitted retry", func(t *testing.T) {
		c := Derive(base, []time.Duration{300 * time.Millisecond, 500 * time.Millisecond})
		want := base
		want.StaysUnbound = base.RetryWindow + windowFactor*500*time.Millisecond
		if c.Scale != 1 || c.Timeouts != want {
			t.Fatalf("fast cluster: scale %v, timeouts %+v; want %+v", c.Scale, c.Timeouts, want)
		}
	})
	t.Run("a slow cluster stretches bounds and windows", func(t *testing.T) {
		c := Derive(base, []time.Duration{time.Second, 6 * time.Second, 2 * time.Second})
		if c.Slowest != 6*time.Second || c.Scale != 3 {
			t.Fatalf("slowest %v scale %v; want 6s and 3", c.Slowest, c.Scale)
		}
		if want := min(3*base.PodsBound, base.MaxBound); c.Timeouts.PodsBound != want || c.Timeouts.Poll != base.Poll {
			t.Fatalf("PodsBound %v Poll %v; want %v and %v", c.Timeouts.PodsBound, c.Timeouts.Poll, want, base.Poll)
		}
		if c.Timeouts.Namespace != 3*base.Namespace {
			t.Fatalf("Namespace %v; want %v", c.Timeouts.Namespace, 3*base.Namespace)
		}
		// The window must exceed what it takes the cluster to do the thing, several times over.
		if c.Timeouts.StaysUnbound < windowFactor*c.Slowest {
			t.Fatalf("StaysUnbound %v is shorter than %d x the slowest create-to-bound %v", c.Timeouts.StaysUnbound, windowFactor, c.Slowest)
		}
	})
	// An implementation may retry up to RetryWindow apart: a window any
	// shorter passes one that does the forbidden thing on its next retry.
	t.Run("every window lasts the retry window and more", func(t *testing.T) {
		for _, rw := range []time.Duration{0, 30 * time.Second, 2 * time.Minute} {
			b := base
			b.RetryWindow = rw
			for _, samples := range [][]time.Duration{nil, {100 * time.Millisecond}, {20 * time.Second}} {
				c := Derive(b, samples)
				if c.Timeouts.StaysUnbound < rw+windowFactor*c.Slowest || c.Timeouts.StaysUnbound < b.StaysUnbound {
					t.Errorf("retry window %v, samples %v: StaysUnbound %v; want at least %v + %d x %v and %v",
						rw, samples, c.Timeouts.StaysUnbound, rw, windowFactor, c.Slowest, b.StaysUnbound)
				}
			}
		}
	})
	// However slow the probe, no Eventually bound exceeds the cap.
	t.Run("bounds are capped", func(t *testing.T) {
		c := Derive(base, []time.Duration{10 * time.Minute})
		if c.Scale < 100 {
			t.Fatalf("scale %v; the test needs a huge one", c.Scale)
		}
		tt := c.Timeouts
		for name, d := range map[string]time.Duration{"ClusterStart": tt.ClusterStart, "Namespace": tt.Namespace,
			"PodsBound": tt.PodsBound, "PodGroupCondition": tt.PodGroupCondition, "Cleanup": tt.Cleanup} {
			if d > base.MaxBound {
				t.Errorf("%s = %v, over the cap %v", name, d, base.MaxBound)
			}
		}
	})
}

// A correct implementation that waits 30 s before each Workload and each
// PodGroup write and backs off up to 2 min must fit in the default bound for
// Workload, PodGroup and pod creation, with time for the cluster.
func TestDefaultPodsBoundFitsASlowCorrectImplementation(t *testing.T) {
	const writeDelay, backoff = 30 * time.Second, 2 * time.Minute
	if need := 2*writeDelay + backoff; DefaultTimeouts().PodsBound < need+30*time.Second {
		t.Fatalf("PodsBound %v; a slow correct implementation needs %v plus the cluster's time", DefaultTimeouts().PodsBound, need)
	}
}

// Without calibration (a probe failed), the configured timeouts still have
// the window and the cap.
func TestResolveAppliesWindowAndCap(t *testing.T) {
	for _, scale := range []float64{1, 100} {
		c := Config{Timeouts: DefaultTimeouts(), TimeoutScale: scale, Artifacts: t.TempDir()}
		if err := c.Resolve(); err != nil {
			t.Fatal(err)
		}
		if c.Timeouts.PodsBound > c.Timeouts.MaxBound || c.Timeouts.StaysUnbound < c.Timeouts.RetryWindow {
			t.Errorf("--timeout-scale=%v: PodsBound %v (cap %v), StaysUnbound %v (retry window %v)",
				scale, c.Timeouts.PodsBound, c.Timeouts.MaxBound, c.Timeouts.StaysUnbound, c.Timeouts.RetryWindow)
		}
	}
}
