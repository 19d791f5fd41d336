package deployment

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
)

// syncDurationMetric is the one metric KEP-6276 names.
const syncDurationMetric = "deployment_sync_duration_seconds"

// KEP-6276, Rollout, Upgrade and Rollback Planning: "What specific metrics
// should inform a rollback? deployment_sync_duration_seconds: significant
// increase may indicate issues with Workload/PodGroup creation." An operator
// can follow it only if the implementation's Deployment controller serves
// it and it moves with the syncs of gang Deployments. Upstream's
// kube-controller-manager has no such metric today: an implementation of
// the KEP adds it. It is read at the implementation's own endpoint
// (--implementation-metrics-url; the reference add-on's on the harness's
// local cluster), and the spec skips, saying so, where none is given.
var _ = ginkgo.Describe("Deployment controller metrics", framework.KEP(6276),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment), func() {
		f := framework.New("deploy-metrics")

		ginkgo.It("serves "+syncDurationMetric+", whose count grows with the syncs of a gang Deployment's create and scale", framework.ID("D-P9"), func(ctx context.Context) {
			url, _ := framework.ImplementationMetricsURL("D-P9's metric " + syncDurationMetric)
			before := syncCount(ctx, url)

			d := create(ctx, recreate(f, "timed", 2, "100m").Obj(), gang(nil))
			app := apps.Deployment(d)
			apps.WaitForGang(ctx, f, app, 2, 2)
			apps.Scale(ctx, f, app, 3)
			apps.WaitForGang(ctx, f, app, 3, 3)

			// At least the create's sync and the scale's: each changed the
			// Deployment, and a controller syncs a Deployment on every change.
			// Other specs' Deployments may add to the count, never take from it.
			ginkgo.By(syncDurationMetric + " at " + url + ": its count grew by 2 or more")
			gomega.Eventually(ctx, func(ctx context.Context) (float64, error) {
				count, _, err := framework.ReadHistogramCount(ctx, url, syncDurationMetric)
				return count, err
			}).
				WithTimeout(f.Timeouts.Namespace).WithPolling(f.Timeouts.Poll).
				Should(gomega.BeNumerically(">=", before+2), "%s count before the create: %v", syncDurationMetric, before)
		})
	})

// syncCount reads the metric's observation count, failing the spec when the
// endpoint does not serve the metric at all.
func syncCount(ctx context.Context, url string) float64 {
	ginkgo.GinkgoHelper()
	var count float64
	gomega.Eventually(ctx, func(ctx context.Context) error {
		var served bool
		var err error
		count, served, err = framework.ReadHistogramCount(ctx, url, syncDurationMetric)
		if err == nil && !served {
			return gomega.StopTrying(url + " serves no " + syncDurationMetric + " histogram (KEP-6276 names it as the rollback signal)")
		}
		return err
	}).WithTimeout(framework.TestContext.Timeouts.Namespace).WithPolling(framework.TestContext.Timeouts.Poll).Should(gomega.Succeed())
	return count
}
