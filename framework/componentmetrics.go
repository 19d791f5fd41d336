package framework

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// ReadCounter sums every sample of the counter name (all label sets) in the
// metrics served at url. A metric that was never incremented is not exported
// at all by component-base, so its absence reads as 0.
func ReadCounter(ctx context.Context, url, name string) (float64, error) {
	raw, err := fetchMetrics(ctx, url)
	if err != nil {
		return 0, err
	}
	return sumCounter(raw, name)
}

func sumCounter(raw []byte, name string) (float64, error) {
	families, err := parseMetrics(raw)
	if err != nil {
		return 0, fmt.Errorf("parsing metrics: %w", err)
	}
	var sum float64
	for _, m := range families[name].GetMetric() {
		sum += m.GetCounter().GetValue()
	}
	return sum, nil
}

// ReadGauge returns the value of the gauge name (its first sample; the
// process and Go runtime gauges have one) served at url.
func ReadGauge(ctx context.Context, url, name string) (float64, error) {
	raw, err := fetchMetrics(ctx, url)
	if err != nil {
		return 0, err
	}
	families, err := parseMetrics(raw)
	if err != nil {
		return 0, fmt.Errorf("parsing metrics of %s: %w", url, err)
	}
	ms := families[name].GetMetric()
	if len(ms) == 0 {
		return 0, fmt.Errorf("%s serves no gauge %s", url, name)
	}
	return ms[0].GetGauge().GetValue(), nil
}

func fetchMetrics(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading metrics from %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading metrics from %s: %s", url, resp.Status)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading metrics from %s: %w", url, err)
	}
	return raw, nil
}
