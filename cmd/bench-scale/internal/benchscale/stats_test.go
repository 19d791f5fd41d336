package benchscale

import (
	"math"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	// Unsorted on purpose: Percentile sorts a copy.
	hundred := make([]time.Duration, 0, 100)
	for i := 100; i >= 1; i-- {
		hundred = append(hundred, time.Duration(i)*time.Millisecond)
	}
	for _, tc := range []struct {
		name string
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value", ms(7), 99, 7 * time.Millisecond},
		{"median of odd count", ms(30, 10, 20), 50, 20 * time.Millisecond},
		{"median of even count is the lower middle", ms(40, 10, 30, 20), 50, 20 * time.Millisecond},
		{"p99 of 100 values", hundred, 99, 99 * time.Millisecond},
		{"p50 of 100 values", hundred, 50, 50 * time.Millisecond},
		{"p99 of 10 values is the largest", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 100), 99, 100 * time.Millisecond},
		{"p100", ms(3, 1, 2), 100, 3 * time.Millisecond},
	} {
		if got := Percentile(tc.in, tc.p); got != tc.want {
			t.Errorf("%s: Percentile(%v, %v) = %v, want %v", tc.name, tc.in, tc.p, got, tc.want)
		}
	}
	in := ms(3, 1, 2)
	Percentile(in, 50)
	if in[0] != 3*time.Millisecond {
		t.Errorf("Percentile sorted its input in place: %v", in)
	}
}

func TestLogLogSlope(t *testing.T) {
	ns := []float64{25, 50, 100, 200}
	pow := func(b, c float64) []float64 {
		var out []float64
		for _, n := range ns {
			out = append(out, c*math.Pow(n, b))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		ys   []float64
		want float64
	}{
		{"linear", pow(1, 3.5), 1},
		{"quadratic", pow(2, 0.01), 2},
		{"constant", pow(0, 42), 0},
		{"n log n is a little above 1", []float64{25 * math.Log(25), 50 * math.Log(50), 100 * math.Log(100), 200 * math.Log(200)}, 1.2},
	} {
		got, err := LogLogSlope(ns, tc.ys)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if math.Abs(got-tc.want) > 0.05 {
			t.Errorf("%s: slope %.3f, want %.3f", tc.name, got, tc.want)
		}
	}
	for name, xy := range map[string][2][]float64{
		"one point":       {{25}, {1}},
		"same x":          {{25, 25}, {1, 2}},
		"zero y":          {{25, 50}, {0, 2}},
		"length mismatch": {{25, 50}, {1}},
	} {
		if _, err := LogLogSlope(xy[0], xy[1]); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
