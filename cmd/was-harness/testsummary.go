package main

import (
	"fmt"
	"io"

	"github.com/workload-aware/apps-harness/testplan"
)

// testSummary prints every failed test with its output, every package that
// failed outside its tests (a build failure, a panic in TestMain), and a
// closing "unit: N passed, N failed, N skipped" line. It reads the stream
// with testplan's go test -json reader, the one the conformance report
// uses, so both count the same tests. It returns an error when anything
// failed, so it can gate a Makefile target.
func testSummary(path string, w io.Writer) error {
	results, err := testplan.ReadGoTestJSON(path)
	if err != nil {
		return err
	}
	counts := map[testplan.Status]int{}
	for _, r := range results {
		counts[r.Status]++
		switch {
		case r.Status != testplan.StatusFail:
		case r.SuiteLevel:
			fmt.Fprintf(w, "--- FAIL package %s: %s\n%s\n", r.Suite, r.Reason, r.Output)
		default:
			fmt.Fprintf(w, "--- FAIL %s %s\n%s\n", r.Suite, r.Name, r.Output)
		}
	}
	fmt.Fprintf(w, "unit: %d passed, %d failed, %d skipped\n", counts[testplan.StatusPass], counts[testplan.StatusFail], counts[testplan.StatusSkip])
	if counts[testplan.StatusFail] > 0 {
		return fmt.Errorf("unit tests failed (details above; full stream in %s)", path)
	}
	return nil
}
