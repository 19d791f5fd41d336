package queue

import (
	"testing"
	"time"
)

// A key that keeps failing backs off, but is retried at least every
// MaxBackoff, not after client-go's default of up to 1000 s.
func TestBackoffGrowsAndIsBoundedByMaxBackoff(t *testing.T) {
	l := rateLimiter()
	var last time.Duration
	for range 40 {
		last = l.When("k")
		if last > MaxBackoff {
			t.Fatalf("delay %v after %d failures, want at most %v", last, l.NumRequeues("k"), MaxBackoff)
		}
	}
	if last != MaxBackoff {
		t.Errorf("delay after 40 failures = %v, want the bound %v (backoff must still grow to it)", last, MaxBackoff)
	}
	l.Forget("k")
	if d := l.When("k"); d > 10*time.Millisecond {
		t.Errorf("delay after Forget = %v, want the first step again", d)
	}
}
