package statefulset

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	// workloadCreationErrors is KEP-6277's statefulset_workload_creation_errors_total.
	workloadCreationErrors = metrics.NewCounter(&metrics.CounterOpts{
		Subsystem:      "statefulset",
		Name:           "workload_creation_errors_total",
		Help:           "Failed attempts of the StatefulSet controller to create a Workload or its PodGroup.",
		StabilityLevel: metrics.ALPHA,
	})
	creationDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      "was_statefulset",
		Name:           "scheduling_object_creation_duration_seconds",
		Help:           "Latency of creating Workloads and PodGroups for StatefulSets, by kind and result.",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 15),
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind", "result"})
	registerOnce sync.Once
)

// RegisterMetrics adds the metrics to the legacy registry served on /metrics.
func RegisterMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(workloadCreationErrors, creationDuration) })
}

func observeCreate(kind string, start time.Time, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	creationDuration.WithLabelValues(kind, result).Observe(time.Since(start).Seconds())
}
