package deployment

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

const subsystem = "was_deployment"

var (
	creationErrors = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      subsystem,
		Name:           "scheduling_object_creation_errors_total",
		Help:           "Failed creations of Workloads and PodGroups for Deployments, by kind.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind"})
	creationDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      subsystem,
		Name:           "scheduling_object_creation_duration_seconds",
		Help:           "Latency of creating Workloads and PodGroups for Deployments, by kind and result.",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 15),
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind", "result"})
	registerOnce sync.Once
)

// RegisterMetrics adds the metrics to the legacy registry served on /metrics.
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(creationErrors, creationDuration)
	})
}

func observeCreate(kind string, start time.Time, err error) {
	result := "success"
	if err != nil {
		result = "error"
		creationErrors.WithLabelValues(kind).Inc()
	}
	creationDuration.WithLabelValues(kind, result).Observe(time.Since(start).Seconds())
}
