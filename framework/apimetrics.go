package framework

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// WriteCounts counts the apiserver's completed write requests (create,
// update, patch, delete) on the main resource (not subresources such as
// status) of each resource in group, keyed "verb resource". It reads the
// apiserver's own apiserver_request_total, so it counts every client's
// writes: diff two readings around the steps to measure.
type WriteCounts map[string]float64

var httpVerbs = map[string]string{"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}

// ReadWriteCounts reads the counters now.
func ReadWriteCounts(ctx context.Context, cs kubernetes.Interface, group string, resources ...string) (WriteCounts, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the apiserver's /metrics: %w", err)
	}
	families, err := parseMetrics(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing the apiserver's /metrics: %w", err)
	}
	out := WriteCounts{}
	fam, ok := families["apiserver_request_total"]
	if !ok {
		return out, nil
	}
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		// The metric's verbs are HTTP's; failed attempts (a 409 on create,
		// say) count too: they are load on the apiserver all the same.
		verb, ok := httpVerbs[labels["verb"]]
		if !ok || labels["group"] != group || labels["subresource"] != "" || !slices.Contains(resources, labels["resource"]) {
			continue
		}
		out[verb+" "+labels["resource"]] += m.GetCounter().GetValue()
	}
	return out, nil
}

// Since returns the writes made after earlier, omitting zeros.
func (w WriteCounts) Since(earlier WriteCounts) WriteCounts {
	out := WriteCounts{}
	for k, v := range w {
		if d := v - earlier[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// String renders the counts sorted by key.
func (w WriteCounts) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(w)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, w[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// Only keeps the entries whose key starts with one of the prefixes.
func (w WriteCounts) Only(prefixes ...string) WriteCounts {
	out := WriteCounts{}
	for k, v := range w {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				out[k] = v
			}
		}
	}
	return out
}

// Without drops the entries whose key starts with one of the prefixes.
func (w WriteCounts) Without(prefixes ...string) WriteCounts {
	out := WriteCounts{}
	for k, v := range w {
		keep := true
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				keep = false
			}
		}
		if keep {
			out[k] = v
		}
	}
	return out
}

// parseMetrics parses Prometheus text exposition, as every Kubernetes
// component serves it on /metrics.
func parseMetrics(raw []byte) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(bytes.NewReader(raw))
}
