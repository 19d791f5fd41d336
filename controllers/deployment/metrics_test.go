package deployment

import (
	"testing"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics/legacyregistry"
)

// syncCount reads deployment_sync_duration_seconds' observation count from
// the registry /metrics serves.
func syncCount(t *testing.T) uint64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "deployment_sync_duration_seconds" {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatal("/metrics serves no deployment_sync_duration_seconds")
	return 0
}

// deployment_sync_duration_seconds counts one observation per item the
// upstream Deployment controller's queue ("deployment") processes, and no
// other queue's.
func TestSyncDurationTimesTheDeploymentQueue(t *testing.T) {
	RegisterMetrics()
	before := syncCount(t)
	for _, name := range []string{deploymentQueue, "replicaset"} {
		q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
		q.Add("ns/d")
		item, _ := q.Get()
		q.Done(item)
		q.ShutDown()
	}
	after := syncCount(t)
	if after != before+1 {
		t.Errorf("deployment_sync_duration_seconds count went %d -> %d over one sync of each queue; want one more", before, after)
	}
}
