package framework

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// kube-scheduler 1.37's PodGroup families as it serves them
// (pkg/scheduler/metrics: labels result and profile), and a pod-level
// family of the same labels that must not be mixed in.
const scheduler137 = `# HELP scheduler_podgroup_schedule_attempts_total [ALPHA] Number of attempts to schedule pod group, by the result.
# TYPE scheduler_podgroup_schedule_attempts_total counter
scheduler_podgroup_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 2
scheduler_podgroup_schedule_attempts_total{profile="default-scheduler",result="unschedulable"} 5
scheduler_podgroup_schedule_attempts_total{profile="other",result="scheduled"} 7
# HELP scheduler_podgroup_scheduling_attempt_duration_seconds [ALPHA] Pod group scheduling attempt latency in seconds
# TYPE scheduler_podgroup_scheduling_attempt_duration_seconds histogram
scheduler_podgroup_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.001"} 0
scheduler_podgroup_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="+Inf"} 2
scheduler_podgroup_scheduling_attempt_duration_seconds_sum{profile="default-scheduler",result="scheduled"} 0.04
scheduler_podgroup_scheduling_attempt_duration_seconds_count{profile="default-scheduler",result="scheduled"} 2
# TYPE scheduler_schedule_attempts_total counter
scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 100
`

func TestScrapeSelectsSeriesByLabelsAndSumsTargets(t *testing.T) {
	fams, err := parseMetrics([]byte(scheduler137))
	if err != nil {
		t.Fatal(err)
	}
	s := Scrape{fams, fams} // two targets: an HA control plane
	attempts := "scheduler_podgroup_schedule_attempts_total"
	for _, c := range []struct {
		labels map[string]string
		want   float64
	}{
		{map[string]string{"result": "scheduled", "profile": "default-scheduler"}, 4},
		{map[string]string{"result": "scheduled"}, 18},
		{map[string]string{"result": "unschedulable", "profile": "default-scheduler"}, 10},
		{map[string]string{"result": "error"}, 0},
		{map[string]string{"type": "podgroup"}, 0},
	} {
		if got := s.Counter(attempts, c.labels); got != c.want {
			t.Errorf("Counter(%v) = %v, want %v", c.labels, got, c.want)
		}
	}
	dur := "scheduler_podgroup_scheduling_attempt_duration_seconds"
	if got := s.HistogramCount(dur, map[string]string{"result": "scheduled"}); got != 4 {
		t.Errorf("HistogramCount = %v, want 4", got)
	}
	if !s.Has(dur) || s.Has("scheduler_podgroup_scheduling_algorithm_duration_seconds") {
		t.Error("Has: a family is present exactly when served")
	}
	got := Scrape{fams}.Series(attempts)
	if len(got) != 3 || got[0] != `{profile="default-scheduler",result="scheduled"} 2` {
		t.Errorf("Series = %q", got)
	}
}

// The suite's credentials go to the component; its CA (the apiserver's) is
// dropped, as the component's own serving certificate is self-signed.
func TestComponentHTTPClientSendsTheSuiteCredentialsToASelfSignedServer(t *testing.T) {
	var auth string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		_, _ = w.Write([]byte(scheduler137))
	}))
	defer srv.Close()
	client, err := componentHTTPClient(&rest.Config{BearerToken: "suite-token",
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte("not the component's CA")}})
	if err != nil {
		t.Fatal(err)
	}
	s := &SchedulerMetrics{targets: []metricsTarget{{srv.URL + "/metrics", client}}}
	scrape, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if auth != "Bearer suite-token" || scrape.Counter("scheduler_podgroup_schedule_attempts_total", nil) != 14 {
		t.Errorf("Authorization %q, scrape %v", auth, scrape.Series("scheduler_podgroup_schedule_attempts_total"))
	}
	denied := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `forbidden: User "system:anonymous" cannot get path "/metrics"`, http.StatusForbidden)
	}))
	defer denied.Close()
	s.targets[0].url = denied.URL + "/metrics"
	if _, err := s.Read(context.Background()); err == nil || !strings.Contains(err.Error(), "cannot get path") {
		t.Errorf("a refusal must be reported with the component's reason: %v", err)
	}
}

func TestSchedulerSecurePortIsItsFlagOrTheDefault(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Command: []string{"kube-scheduler", "--bind-address=127.0.0.1"}}}}}
	if p := schedulerSecurePort(pod); p != 10259 {
		t.Errorf("default: %d", p)
	}
	pod.Spec.Containers[0].Args = []string{"--secure-port=11259"}
	if p := schedulerSecurePort(pod); p != 11259 {
		t.Errorf("--secure-port: %d", p)
	}
}
