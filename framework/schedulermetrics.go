package framework

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// The scheduler SLIs KEP-6277 names (Monitoring Requirements) are
// kube-scheduler's own metrics (KEP-4671), not the API's: the suite reads them
// from the scheduler's /metrics, wherever it can reach that.

// schedulerMetricsHint says how to give the suite kube-scheduler's metrics
// where it cannot find them itself.
const schedulerMetricsHint = "give the suite --scheduler-metrics-url (env SCHEDULER_METRICS_URL): " +
	"kube-scheduler's /metrics as this machine reaches it, e.g. https://<control-plane>:10259/metrics " +
	"(read with the suite's credentials, which kube-scheduler must authorize for GET /metrics) or " +
	"http://127.0.0.1:PORT/metrics of a kubectl port-forward that adds them; " +
	"for a `make cluster-up` cluster, https://127.0.0.1:<kube-scheduler's port, as `make cluster-status` shows it>/metrics"

// kubeadmSchedulerSelector labels kube-scheduler's static pod on a kubeadm
// cluster (kind's too).
const kubeadmSchedulerSelector = "component=kube-scheduler"

// defaultSchedulerSecurePort is kube-scheduler's --secure-port default.
const defaultSchedulerSecurePort = 10259

// SchedulerMetrics is where the suite reads kube-scheduler's metrics: one
// target, or one per scheduler pod of an HA control plane (only the leader
// schedules, so their sum is the cluster's).
type SchedulerMetrics struct {
	// Where names the targets, for messages.
	Where   string
	targets []metricsTarget
}

type metricsTarget struct {
	url    string
	client *http.Client
}

// ReachSchedulerMetrics finds kube-scheduler's metrics and reads them once.
// A URL the suite was given, or the local cluster's scheduler, that cannot be
// read fails the spec; where the suite has neither and finds no scheduler pod
// to forward to, or cannot read one it found, it skips, saying why and how
// to provide them.
func ReachSchedulerMetrics(ctx context.Context) *SchedulerMetrics {
	ginkgo.GinkgoHelper()
	s, found, err := locateSchedulerMetrics(ctx)
	if err != nil {
		if found {
			ginkgo.Fail(err.Error())
		}
		ginkgo.Skip(err.Error())
	}
	// A kube-scheduler just (re)started answers 403 to everyone until its
	// delegated authentication has loaded the client CA: wait that out.
	deadline := time.Now().Add(TestContext.Timeouts.Namespace)
	for _, err = s.Read(ctx); err != nil && time.Now().Before(deadline) && ctx.Err() == nil; _, err = s.Read(ctx) {
		time.Sleep(TestContext.Timeouts.Poll)
	}
	if err != nil {
		msg := fmt.Sprintf("reading kube-scheduler's metrics at %s: %v", s.Where, err)
		if found {
			ginkgo.Fail(msg)
		}
		ginkgo.Skip(msg + "; " + schedulerMetricsHint)
	}
	return s
}

// locateSchedulerMetrics returns the targets, and found: whether they are
// the flag's or the local cluster's (which must work) rather than
// discovered. An error with found false says why there are none.
func locateSchedulerMetrics(ctx context.Context) (*SchedulerMetrics, bool, error) {
	if u := TestContext.SchedulerMetricsURL; u != "" {
		client, err := componentHTTPClient(RESTConfig())
		if err != nil {
			return nil, true, err
		}
		return &SchedulerMetrics{Where: u, targets: []metricsTarget{{u, client}}}, true, nil
	}
	if lc := LocalCluster; lc != nil {
		base, err := lc.SecureURL(localcluster.Scheduler)
		if err != nil {
			return nil, true, err
		}
		client, err := componentHTTPClient(RESTConfig())
		if err != nil {
			return nil, true, err
		}
		u := base + "/metrics"
		return &SchedulerMetrics{Where: u + " (the local cluster's kube-scheduler)", targets: []metricsTarget{{u, client}}}, true, nil
	}
	pods, err := ClientSet().CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: kubeadmSchedulerSelector})
	if err != nil {
		return nil, false, fmt.Errorf("listing kube-system's pods %s: %v; %s", kubeadmSchedulerSelector, err, schedulerMetricsHint)
	}
	s := &SchedulerMetrics{}
	client, err := componentHTTPClient(RESTConfig())
	if err != nil {
		return nil, true, err
	}
	var where []string
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Status.Phase != corev1.PodRunning {
			continue
		}
		port := schedulerSecurePort(pod)
		addr := PortForward(ctx, pod, port)
		s.targets = append(s.targets, metricsTarget{"https://" + addr + "/metrics", client})
		where = append(where, fmt.Sprintf("pod %s/%s:%d", pod.Namespace, pod.Name, port))
	}
	if len(s.targets) == 0 {
		return nil, false, fmt.Errorf("no kube-scheduler to read: no --scheduler-metrics-url, not the suite's local cluster, and no running pod %s in kube-system (a kubeadm cluster's static pod); %s",
			kubeadmSchedulerSelector, schedulerMetricsHint)
	}
	s.Where = strings.Join(where, ", ") + " (port-forwarded)"
	return s, false, nil
}

// schedulerSecurePort is the --secure-port of pod's kube-scheduler command,
// else the default.
func schedulerSecurePort(pod *corev1.Pod) int32 {
	for _, c := range pod.Spec.Containers {
		for _, a := range append(slices.Clone(c.Command), c.Args...) {
			if v, ok := strings.CutPrefix(a, "--secure-port="); ok {
				if p, err := strconv.ParseInt(v, 10, 32); err == nil && p > 0 {
					return int32(p)
				}
			}
		}
	}
	return defaultSchedulerSecurePort
}

// componentHTTPClient reads a component's https endpoint with the suite's own
// credentials (client certificate or bearer token): kube-scheduler and
// kube-controller-manager authenticate and authorize /metrics through the
// apiserver. Their serving certificate is self-signed unless the cluster
// gave them one, so it is not verified; plain http needs none of this.
func componentHTTPClient(cfg *rest.Config) (*http.Client, error) {
	cfg.TLSClientConfig.Insecure = true
	cfg.TLSClientConfig.CAData, cfg.TLSClientConfig.CAFile, cfg.TLSClientConfig.ServerName = nil, "", ""
	cfg.Timeout = 15 * time.Second
	return rest.HTTPClientFor(cfg)
}

// Read scrapes every target.
func (s *SchedulerMetrics) Read(ctx context.Context) (Scrape, error) {
	var out Scrape
	for _, t := range s.targets {
		fams, err := readFamilies(ctx, t)
		if err != nil {
			return nil, err
		}
		out = append(out, fams)
	}
	return out, nil
}

func readFamilies(ctx context.Context, t metricsTarget) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", t.url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", t.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %.300s", t.url, resp.Status, raw)
	}
	fams, err := parseMetrics(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing the metrics of %s: %w", t.url, err)
	}
	return fams, nil
}

// Scrape is one reading of each target's metric families.
type Scrape []map[string]*dto.MetricFamily

// Has says whether a target serves the family name. component-base omits a
// labelled family until one of its series is first written.
func (s Scrape) Has(name string) bool {
	for _, fams := range s {
		if _, ok := fams[name]; ok {
			return true
		}
	}
	return false
}

// Counter sums the counter name over the targets' series whose labels
// include labels (other labels may be present).
func (s Scrape) Counter(name string, labels map[string]string) float64 {
	var sum float64
	for _, m := range s.series(name, labels) {
		sum += m.GetCounter().GetValue()
	}
	return sum
}

// HistogramCount sums the observation counts (the _count series) of the
// histogram name over the series whose labels include labels.
func (s Scrape) HistogramCount(name string, labels map[string]string) float64 {
	var sum float64
	for _, m := range s.series(name, labels) {
		sum += float64(m.GetHistogram().GetSampleCount())
	}
	return sum
}

// Series renders every series of name with its value (a histogram's
// count), sorted: what a message shows of a family.
func (s Scrape) Series(name string) []string {
	var out []string
	for _, m := range s.series(name, nil) {
		v := m.GetCounter().GetValue()
		if m.Histogram != nil {
			v = float64(m.GetHistogram().GetSampleCount())
		}
		out = append(out, fmt.Sprintf("%s %v", renderLabels(m), v))
	}
	sort.Strings(out)
	return out
}

func (s Scrape) series(name string, labels map[string]string) []*dto.Metric {
	var out []*dto.Metric
	for _, fams := range s {
		for _, m := range fams[name].GetMetric() {
			if hasLabels(m, labels) {
				out = append(out, m)
			}
		}
	}
	return out
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func renderLabels(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}
