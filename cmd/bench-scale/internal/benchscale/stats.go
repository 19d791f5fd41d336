package benchscale

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0 < p <= 100) of ds by the
// nearest-rank method: the smallest value that at least p% of the values do
// not exceed. It is always one of the measured values, never an
// interpolation between two of them. Zero for no values.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// LogLogSlope fits log(y) = a + b*log(x) by least squares and returns b: the
// exponent of the power law y ~ x^b the points follow. A cost that grows
// linearly with N has slope 1; one that grows quadratically, 2. It needs at
// least two distinct positive x and positive y.
func LogLogSlope(xs, ys []float64) (float64, error) {
	if len(xs) != len(ys) {
		return 0, fmt.Errorf("slope: %d x values for %d y values", len(xs), len(ys))
	}
	var lx, ly []float64
	for i := range xs {
		if xs[i] <= 0 || ys[i] <= 0 {
			return 0, fmt.Errorf("slope: point (%v, %v) is not positive: no logarithm", xs[i], ys[i])
		}
		lx, ly = append(lx, math.Log(xs[i])), append(ly, math.Log(ys[i]))
	}
	if len(lx) < 2 {
		return 0, fmt.Errorf("slope: %d points; need at least 2", len(lx))
	}
	mx, my := mean(lx), mean(ly)
	var sxy, sxx float64
	for i := range lx {
		sxy += (lx[i] - mx) * (ly[i] - my)
		sxx += (lx[i] - mx) * (lx[i] - mx)
	}
	if sxx == 0 {
		return 0, fmt.Errorf("slope: every x is %v; need two different ones", xs[0])
	}
	return sxy / sxx, nil
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
