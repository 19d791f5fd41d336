package framework

import (
	"testing"
	"time"
)

func TestDerive(t *testing.T) {
	base := DefaultTimeouts()
	t.Run("a fast cluster keeps the defaults", func(t *testing.T) {
		c := Derive(base, []time.Duration{300 * time.Millisecond, 500 * time.Millisecond})
		if c.Scale != 1 || c.Timeouts != base {
			t.Fatalf("fast cluster: scale %v, timeouts %+v; want the defaults", c.Scale, c.Timeouts)
		}
	})
	t.Run("a slow cluster stretches bounds and windows", func(t *testing.T) {
		c := Derive(base, []time.Duration{time.Second, 6 * time.Second, 2 * time.Second})
		if c.Slowest != 6*time.Second || c.Scale != 3 {
			t.Fatalf("slowest %v scale %v; want 6s and 3", c.Slowest, c.Scale)
		}
		if c.Timeouts.PodsBound != 3*base.PodsBound || c.Timeouts.Poll != base.Poll {
			t.Fatalf("PodsBound %v Poll %v; want %v and %v", c.Timeouts.PodsBound, c.Timeouts.Poll, 3*base.PodsBound, base.Poll)
		}
		// The window must exceed what it takes the cluster to do the thing, several times over.
		if c.Timeouts.StaysUnbound < windowFactor*c.Slowest {
			t.Fatalf("StaysUnbound %v is shorter than %d x the slowest create-to-bound %v", c.Timeouts.StaysUnbound, windowFactor, c.Slowest)
		}
	})
}
