//go:build e2e

// Package e2e is the test binary that runs every suite: it imports the suite
// packages (which register their specs), starts or connects to the cluster
// once, and writes the JUnit report and the human summary.
//
//	go test -tags e2e ./suites/e2e -args --ginkgo.v --kubeconfig=...   (an existing cluster)
//	make e2e                                                           (a local cluster)
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/workload-aware/apps-harness/framework"
	_ "github.com/workload-aware/apps-harness/suites/deployment"
	_ "github.com/workload-aware/apps-harness/suites/install"
	_ "github.com/workload-aware/apps-harness/suites/packaging"
	_ "github.com/workload-aware/apps-harness/suites/scheduling"
	_ "github.com/workload-aware/apps-harness/suites/soak"
	_ "github.com/workload-aware/apps-harness/suites/statefulset"
	_ "github.com/workload-aware/apps-harness/suites/upgrade"
)

func init() { framework.RegisterFlags(flag.CommandLine) }

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(m.Run())
}

func TestE2E(t *testing.T) {
	gomega.RegisterFailHandler(ginkgo.Fail)
	ginkgo.RunSpecs(t, "Workload-Aware Scheduling for apps/v1 conformance")
}

var _ = ginkgo.SynchronizedBeforeSuite(func(ctx context.Context) []byte {
	return framework.SetupCluster(ctx)
}, func(ctx context.Context, kubeconfig []byte) {
	framework.ConnectCluster(kubeconfig)
	// Windows and bounds follow the cluster's measured speed (framework.Calibration).
	c, err := framework.CalibrateTimeouts(ctx, framework.ClientSet())
	if err != nil {
		ginkgo.GinkgoWriter.Printf("calibration failed, keeping the configured timeouts: %v\n", err)
		return
	}
	fmt.Fprintf(os.Stderr, "[calibration] create-to-bound %v (slowest %v): Eventually bounds x%.2f, nothing-happens windows %v\n",
		c.Samples, c.Slowest, c.Scale, c.Timeouts.StaysUnbound)
})

var _ = ginkgo.ReportAfterSuite("summary", func(report ginkgo.Report) {
	if err := framework.WriteSummary(report); err != nil {
		ginkgo.GinkgoWriter.Printf("writing the summary: %v\n", err)
	}
})
