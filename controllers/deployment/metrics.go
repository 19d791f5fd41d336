package deployment

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
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
	// syncDuration is KEP-6276's deployment_sync_duration_seconds ("What
	// specific metrics should inform a rollback? deployment_sync_duration_seconds:
	// significant increase may indicate issues with Workload/PodGroup
	// creation"): the time of each sync of the upstream Deployment
	// controller, which in the reference includes the Workload's compile and
	// write (the hooks run inside the sync, on its ReplicaSet writes).
	syncDuration = metrics.NewHistogram(&metrics.HistogramOpts{
		Subsystem:      "deployment",
		Name:           "sync_duration_seconds",
		Help:           "Duration of each sync of a Deployment by the Deployment controller, Workload and PodGroup work included.",
		Buckets:        metrics.ExponentialBuckets(0.001, 2, 15),
		StabilityLevel: metrics.ALPHA,
	})
	registerOnce sync.Once
)

// deploymentQueue is the name of the upstream Deployment controller's work
// queue: its processing time per item is the duration of one sync.
const deploymentQueue = "deployment"

// RegisterMetrics adds the metrics to the legacy registry served on /metrics.
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(creationErrors, creationDuration, syncDuration)
		// The upstream controller times nothing itself; its queue does. Set
		// before any queue exists (a queue takes the provider when built).
		workqueue.SetProvider(syncTiming{})
	})
}

// syncTiming is a work-queue metrics provider that keeps one metric: the
// Deployment queue's work duration, as deployment_sync_duration_seconds.
// The other queues' metrics are not exported, as before it.
type syncTiming struct{}

func (syncTiming) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	if name == deploymentQueue {
		return syncDuration
	}
	return noMetric{}
}
func (syncTiming) NewDepthMetric(string) workqueue.GaugeMetric       { return noMetric{} }
func (syncTiming) NewAddsMetric(string) workqueue.CounterMetric      { return noMetric{} }
func (syncTiming) NewLatencyMetric(string) workqueue.HistogramMetric { return noMetric{} }
func (syncTiming) NewRetriesMetric(string) workqueue.CounterMetric   { return noMetric{} }
func (syncTiming) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noMetric{}
}
func (syncTiming) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return noMetric{}
}

type noMetric struct{}

func (noMetric) Inc()            {}
func (noMetric) Dec()            {}
func (noMetric) Set(float64)     {}
func (noMetric) Observe(float64) {}

func observeCreate(kind string, start time.Time, err error) {
	result := "success"
	if err != nil {
		result = "error"
		creationErrors.WithLabelValues(kind).Inc()
	}
	creationDuration.WithLabelValues(kind, result).Observe(time.Since(start).Seconds())
}
