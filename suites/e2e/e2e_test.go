//go:build e2e

// Package e2e is the test binary that runs every suite: it imports the suite
// packages (which register their specs), starts or connects to the cluster
// once, and writes the JUnit report and the human summary.
//
//	go test -tags e2e ./suites/e2e -args --ginkgo.v --kubeconfig=...   (an existing cluster)
//	make e2e                                                           (a local cluster)
package e2e

import (
	"flag"
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

// Process 1 starts (or checks) the cluster and calibrates the timeouts once;
// every process, in a parallel run too, connects with what it measured.
var _ = ginkgo.SynchronizedBeforeSuite(framework.SetupSuite, framework.ConnectSuite)

var _ = ginkgo.ReportAfterSuite("summary", func(report ginkgo.Report) {
	if err := framework.WriteSummary(report); err != nil {
		ginkgo.GinkgoWriter.Printf("writing the summary: %v\n", err)
	}
})
