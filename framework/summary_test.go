package framework

import (
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// TestSummaryShowsEachCluster: specs that ran on a cluster of their own are
// listed by cluster, process and start, apart from the shared cluster's,
// and the phases line counts them apart from the Serial ones.
func TestSummaryShowsEachCluster(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 22, 0, 0, 0, time.UTC)
	spec := func(text string, process int, start time.Duration, run time.Duration, serial bool, cluster string) types.SpecReport {
		s := types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: text, State: types.SpecStatePassed,
			ParallelProcess: process, StartTime: t0.Add(start), RunTime: run, IsSerial: serial}
		if cluster != "" {
			s.ReportEntries = types.ReportEntries{{Name: ownClusterEntry, Value: types.WrapEntryValue(cluster)}}
		}
		return s
	}
	report := ginkgo.Report{SuiteConfig: types.SuiteConfig{ParallelTotal: 6}, SpecReports: types.SpecReports{
		spec("shared one", 2, 0, 3*time.Second, false, ""),
		spec("restarts the scheduler", 1, 20*time.Second, 40*time.Second, false, "p1-2"),
		spec("restarts kube-apiserver", 3, 10*time.Second, 30*time.Second, false, "p3-1"),
	}}
	got := phases(report)
	if !strings.Contains(got, "Specs run side by side: 1, 3s") || !strings.Contains(got, "Serial specs, run alone after them: 0") ||
		!strings.Contains(got, "beside the others on their processes' own clusters: 2, 1m10s") {
		t.Errorf("phases: %s", got)
	}
	table := ownClusterTable(report)
	first, second := strings.Index(table, "| p3-1 | 3 | 22:00:10 | passed | 30.0s | restarts kube-apiserver |"), strings.Index(table, "| p1-2 | 1 | 22:00:20 | passed | 40.0s | restarts the scheduler |")
	if first < 0 || second < first || strings.Contains(table, "shared one") {
		t.Errorf("own clusters, in the order they started, without the shared cluster's spec:\n%s", table)
	}
	if specCluster(report.SpecReports[0]) != sharedCluster || ownClusterTable(ginkgo.Report{SpecReports: report.SpecReports[:1]}) != "" {
		t.Error("a run without own clusters must have no own-cluster table")
	}
}
