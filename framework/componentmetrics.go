package framework

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/onsi/ginkgo/v2"
)

// StatefulSetCreationErrors is KEP-6277's one metric, served by the
// implementation's controllers.
const StatefulSetCreationErrors = "statefulset_workload_creation_errors_total"

// ImplementationMetricsURL returns where the implementation's controllers
// serve metrics (--implementation-metrics-url, or the reference add-on's
// endpoint on the harness's local cluster), and whether that is the
// reference; metric is what the spec reads there. Those metrics are the
// implementation's own, not the API's: where the suite cannot reach them it
// skips the spec, saying how to give it the endpoint.
func ImplementationMetricsURL(metric string) (url string, reference bool) {
	ginkgo.GinkgoHelper()
	url, reference, why := locateImplementationMetrics()
	if url == "" {
		ginkgo.Skip(metric + why)
	}
	return url, reference
}

// ImplementationMetricsURLIfAny is ImplementationMetricsURL for a spec whose
// subject is elsewhere: "" where the metrics cannot be reached, no skip.
func ImplementationMetricsURLIfAny() string {
	url, _, _ := locateImplementationMetrics()
	return url
}

// locateImplementationMetrics finds the implementation's metrics endpoint,
// or says (as the end of a sentence naming the metric) why there is none.
func locateImplementationMetrics() (url string, reference bool, why string) {
	if u := TestContext.ImplementationMetricsURL; u != "" {
		return u, false, ""
	}
	if LocalCluster != nil {
		u, err := LocalCluster.MetricsURL(ReferenceControllerManager)
		if err == nil {
			return u, true, ""
		}
		return "", false, " is the implementation's own and the local cluster's add-on serves no metrics (" + err.Error() + "): give the suite --implementation-metrics-url"
	}
	return "", false, " is served by the implementation's controllers, not the API: give the suite --implementation-metrics-url (env IMPLEMENTATION_METRICS_URL), e.g. through kubectl port-forward (docs/vendor-guide.md)"
}

// ReadHistogramCount returns the observation count (the _count series,
// summed over label sets) of the histogram name served at url, and whether
// url serves that family at all.
func ReadHistogramCount(ctx context.Context, url, name string) (count float64, served bool, err error) {
	raw, err := fetchMetrics(ctx, url)
	if err != nil {
		return 0, false, err
	}
	families, err := parseMetrics(raw)
	if err != nil {
		return 0, false, fmt.Errorf("parsing metrics of %s: %w", url, err)
	}
	family, served := families[name]
	for _, m := range family.GetMetric() {
		count += float64(m.GetHistogram().GetSampleCount())
	}
	return count, served, nil
}

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
