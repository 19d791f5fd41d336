package framework

import (
	"fmt"
	"os"
	"path/filepath"
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
		rows = append(rows, fmt.Sprintf("| %s | %s | %.1fs | %s |", s.State, s.FullText(), s.RunTime.Seconds(), strings.Join(s.Labels(), ", ")))
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
	b.WriteString("| state | spec | time | labels |\n|---|---|---|---|\n")
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
// the run's wall time whatever the number of processes.
func phases(report ginkgo.Report) string {
	var serial, parallel time.Duration
	var nSerial, nParallel int
	for _, s := range report.SpecReports {
		if s.LeafNodeType != types.NodeTypeIt || s.State == types.SpecStateSkipped {
			continue
		}
		if s.IsSerial {
			serial += s.RunTime
			nSerial++
		} else {
			parallel += s.RunTime
			nParallel++
		}
	}
	return fmt.Sprintf("Ginkgo processes: %d. Specs run side by side: %d, %s of spec time. Serial specs, run alone after them: %d, %s.",
		report.SuiteConfig.ParallelTotal, nParallel, parallel.Round(time.Second), nSerial, serial.Round(time.Second))
}
