package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
)

// WriteSummary writes a human summary of a suite run to
// TestContext.Artifacts/summary_e2e.md: counts, then one line per spec with
// its state, duration and labels, then each failure's message and location.
// Call it from ReportAfterSuite.
func WriteSummary(report ginkgo.Report) error {
	counts := map[types.SpecState]int{}
	var rows, failures []string
	for _, s := range report.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt {
			if s.State.Is(types.SpecStateFailureStates) {
				failures = append(failures, fmt.Sprintf("### [%s] %s\n\n```\n%s\n```\n%s\n", s.LeafNodeType, s.State, s.Failure.Message, s.Failure.Location))
			}
			continue
		}
		counts[s.State]++
		rows = append(rows, fmt.Sprintf("| %s | %s | %.1fs | %s | %s |", s.State, s.FullText(), s.RunTime.Seconds(), specCluster(s), strings.Join(s.Labels(), ", ")))
		if s.State.Is(types.SpecStateFailureStates) {
			failures = append(failures, fmt.Sprintf("### %s\n\n```\n%s\n```\n%s\n", s.FullText(), s.Failure.Message, s.Failure.Location))
		}
		if s.State == types.SpecStateSkipped && s.Failure.Message != "" {
			rows[len(rows)-1] += " skipped: " + s.Failure.Message
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", report.SuiteDescription)
	fmt.Fprintf(&b, "%s in %s; passed %d, failed %d, skipped %d, pending %d\n\n", verdict(report.SuiteSucceeded),
		report.RunTime.Round(time.Second), counts[types.SpecStatePassed],
		counts[types.SpecStateFailed]+counts[types.SpecStatePanicked]+counts[types.SpecStateTimedout]+counts[types.SpecStateInterrupted]+counts[types.SpecStateAborted],
		counts[types.SpecStateSkipped], counts[types.SpecStatePending])
	fmt.Fprintf(&b, "%s\n\n", phases(report))
	if own := ownClusterTable(report); own != "" {
		b.WriteString(own + "\n")
	}
	b.WriteString("| state | spec | time | cluster | labels |\n|---|---|---|---|---|\n")
	b.WriteString(strings.Join(rows, "\n") + "\n")
	if len(failures) > 0 {
		b.WriteString("\n## Failures\n\n" + strings.Join(failures, "\n"))
	}
	path := filepath.Join(TestContext.Artifacts, "summary_e2e.md")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "summary written to %s\n", path)
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "PASSED"
	}
	return "FAILED"
}

// phases says how the run was spread: specs labelled Serial run alone on
// process 1 after the parallel ones, so their summed time is a floor under
// the run's wall time whatever the number of processes; or, with own
// clusters, each on a cluster of its own beside the others.
func phases(report ginkgo.Report) string {
	var serial, parallel, own time.Duration
	var nSerial, nParallel, nOwn int
	for _, s := range report.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt || s.State == types.SpecStateSkipped {
			continue
		}
		switch {
		case specCluster(s) != sharedCluster:
			own += s.RunTime
			nOwn++
		case s.IsSerial:
			serial += s.RunTime
			nSerial++
		default:
			parallel += s.RunTime
			nParallel++
		}
	}
	out := fmt.Sprintf("Ginkgo processes: %d. Specs run side by side: %d, %s of spec time. Serial specs, run alone after them: %d, %s.",
		report.SuiteConfig.ParallelTotal, nParallel, parallel.Round(time.Second), nSerial, serial.Round(time.Second))
	if nOwn > 0 {
		out += fmt.Sprintf(" Serial specs, beside the others on their processes' own clusters: %d, %s.", nOwn, own.Round(time.Second))
	}
	return out
}

// sharedCluster names the cluster every spec not on its own ran on.
const sharedCluster = "shared"

// specCluster is the cluster s ran on: its own (onOwnCluster's report
// entry), or the shared one.
func specCluster(s types.SpecReport) string {
	for _, e := range s.ReportEntries {
		if e.Name == ownClusterEntry {
			return e.StringRepresentation()
		}
	}
	return sharedCluster
}

// ownClusterTable lists the own clusters with their spec, state and time,
// in the order they ran; "" when no spec ran on its own.
func ownClusterTable(report ginkgo.Report) string {
	var rows []string
	var specs []types.SpecReport
	for _, s := range report.SpecReports {
		if s.LeafNodeType == types.NodeTypeIt && specCluster(s) != sharedCluster {
			specs = append(specs, s)
		}
	}
	if len(specs) == 0 {
		return ""
	}
	slices.SortFunc(specs, func(a, b types.SpecReport) int { return a.StartTime.Compare(b.StartTime) })
	for _, s := range specs {
		rows = append(rows, fmt.Sprintf("| %s | %d | %s | %s | %.1fs | %s |", specCluster(s), s.ParallelProcess,
			s.StartTime.Format("15:04:05"), s.State, s.RunTime.Seconds(), s.FullText()))
	}
	return "## Own clusters\n\nThe Serial specs ran beside the other specs, away from the shared cluster: each on the local cluster its Ginkgo process kept for them (a new one after a failed spec, or after handing its slot to a waiting process).\n\n" +
		"| cluster | process | started | state | time | spec |\n|---|---|---|---|---|---|\n" + strings.Join(rows, "\n") + "\n"
}
