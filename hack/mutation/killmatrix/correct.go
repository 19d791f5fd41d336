package main

// The other expectation of the same machinery: `make variants` runs correct
// variants of the reference (hack/variants/NN-name.patch), each making a
// choice the KEPs allow and the reference did not make, and the suite must
// PASS them. A correct variant that loses an id the reference passes is a
// false positive of the suite: it would fail a correct vendor.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/workload-aware/apps-harness/hack/mutation/variant"
	"github.com/workload-aware/apps-harness/testplan"
)

// Expect is what a variant must do to the suite.
type Expect string

const (
	// ExpectKill: a wrong variant (hack/mutation/) must make a spec fail.
	ExpectKill Expect = "kill"
	// ExpectPass: a correct variant (hack/variants/) must pass every id the
	// unmutated reference passes; the ids of a KEP it does not implement
	// must be reported as not implemented, not as failed.
	ExpectPass Expect = "pass"
)

// Verdicts of a correct variant.
const (
	// Agrees: the same PASS ids as the reference (the other KEP's not
	// implemented, for a variant of one KEP).
	Agrees Verdict = "agrees"
	// FalsePositive: the suite failed, skipped or refused a correct
	// implementation where the reference passes.
	FalsePositive Verdict = "FAILS A CORRECT IMPLEMENTATION"
)

// IDDiff is one id the reference passes and a correct variant does not.
type IDDiff struct {
	ID   string
	Got  testplan.Status
	Want string
	// Why names the spec that failed or skipped, with its message.
	Why string
}

// CorrectRow is one correct variant's line of the matrix.
type CorrectRow struct {
	Row
	// Compared is how many ids the reference passed in the baseline run.
	Compared int
	// NotImplemented counts the ids reported as not implemented, as the
	// variant's header asks (# Implements).
	NotImplemented int
	Diffs          []IDDiff
}

// idStatuses aggregates a run's spec results per test-plan id, as the
// vendor-mode report does (only specs count).
func idStatuses(plan *testplan.Plan, results []testplan.TestResult) map[string]testplan.Result {
	rep := testplan.Aggregate(plan, results, testplan.Options{Mode: testplan.ModeVendor})
	out := map[string]testplan.Result{}
	for _, r := range rep.Results {
		out[r.Item.ID] = r
	}
	return out
}

// kepOf is "KEP-6276" for the plan's "kep-6276".
func kepOf(it testplan.Item) string { return strings.ToUpper(it.KEP) }

// collectCorrect reads every correct variant that has a result directory.
// In the ids scope only the variant's own ids are compared: the baseline ran
// the union of every selected variant's specs.
func collectCorrect(patchDir, resultDir string, scope Scope, base Baseline, plan *testplan.Plan) ([]CorrectRow, error) {
	variants, err := variant.ReadAll(patchDir)
	if err != nil {
		return nil, err
	}
	var baseIDs map[string]testplan.Result
	if base.Present && base.Results != nil {
		baseIDs = idStatuses(plan, base.Results)
	}
	var rows []CorrectRow
	for _, v := range variants {
		if !v.Correct() {
			return nil, fmt.Errorf("%s: not a correct variant (its header has no # Allowed); wrong variants belong in hack/mutation/", v.Path)
		}
		dir := filepath.Join(resultDir, v.Name)
		if _, err := os.Stat(filepath.Join(dir, "outcome")); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		row, err := readRow(v, dir, base)
		if err != nil {
			return nil, err
		}
		rows = append(rows, judgeCorrect(row, scope, base, baseIDs, plan))
	}
	return rows, nil
}

func judgeCorrect(row Row, scope Scope, base Baseline, baseIDs map[string]testplan.Result, plan *testplan.Plan) CorrectRow {
	c := CorrectRow{Row: row}
	switch {
	case row.CheckFailed && base.Present && !base.CheckFailed:
		c.Verdict = FalsePositive
		return c
	case row.Results == nil || row.Verdict == Unmeasured && !row.CheckFailed:
		c.Verdict = Unmeasured
		return c
	case baseIDs == nil:
		c.Verdict, c.Why = Unmeasured, "no baseline run of the unmutated reference to compare with"
		return c
	}
	got := idStatuses(plan, row.Results)
	for _, it := range plan.Items {
		if baseIDs[it.ID].Status != testplan.StatusPass || scope == ScopeIDs && !slices.Contains(row.IDs, it.ID) {
			continue
		}
		c.Compared++
		r := got[it.ID]
		if !row.ImplementsKEP(kepOf(it)) {
			if notImplemented(r) {
				c.NotImplemented++
				continue
			}
			c.Diffs = append(c.Diffs, IDDiff{ID: it.ID, Got: r.Status, Want: "not implemented (the variant implements " + strings.Join(row.Implements, ", ") + " only)", Why: evidence(r)})
			continue
		}
		if r.Status != testplan.StatusPass {
			c.Diffs = append(c.Diffs, IDDiff{ID: it.ID, Got: r.Status, Want: "PASS", Why: evidence(r)})
		}
	}
	c.Verdict = Agrees
	if len(c.Diffs) > 0 {
		c.Verdict = FalsePositive
	}
	return c
}

// notImplemented: the report says the id's KEP is not implemented, by its
// own status, or by skips whose every reason says so.
func notImplemented(r testplan.Result) bool {
	if r.Status == testplan.StatusNotImplemented {
		return true
	}
	if r.Status != testplan.StatusSkip || len(r.Cluster) == 0 {
		return false
	}
	return !slices.ContainsFunc(r.Cluster, func(t testplan.TestResult) bool {
		return !strings.HasPrefix(t.Reason, testplan.NotImplementedPrefix)
	})
}

// evidence names the first spec of r that did not pass, with its message.
func evidence(r testplan.Result) string {
	for _, t := range r.Cluster {
		if t.Status != testplan.StatusPass {
			return fmt.Sprintf("%s %s: %s", t.Status, t.DisplayName(), message(t.Reason))
		}
	}
	if len(r.Cluster) == 0 {
		return "no spec of the id ran"
	}
	return "-"
}

func failedCorrect(base Baseline, rows []CorrectRow) bool {
	if base.Present && base.Verdict != Survived {
		return true
	}
	return slices.ContainsFunc(rows, func(r CorrectRow) bool { return r.Verdict != Agrees })
}

// renderCorrect writes the correct-variant matrix: one row per variant
// (how many of the reference's PASS ids it kept), then every id it lost,
// with the spec and message that lost it.
func renderCorrect(w io.Writer, scope Scope, base Baseline, rows []CorrectRow) {
	count := map[Verdict]int{}
	for _, r := range rows {
		count[r.Verdict]++
	}
	fmt.Fprintf(w, "# Correct-variant matrix\n\n")
	fmt.Fprintf(w, "%d correct variants run: %d agree with the reference, %d FAIL A CORRECT IMPLEMENTATION, %d not measured.\n\n",
		len(rows), count[Agrees], count[FalsePositive], count[Unmeasured])
	fmt.Fprintf(w, "Each variant makes a choice the KEPs allow and the reference did not make; the suite must give it every id the reference passes "+
		"(the other KEP's ids reported as not implemented, for a variant of one KEP). %s\n\n", scope.correctSentence())
	renderBaseline(w, base, "!!! No baseline run: nothing to compare with.", "")
	fmt.Fprintf(w, "| Variant | Area | Implements | Verdict | Reference's PASS ids kept | Not implemented | Time |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		impl := "both KEPs"
		if len(r.Implements) > 0 {
			impl = strings.Join(r.Implements, ", ")
		}
		verdict, kept := string(r.Verdict), fmt.Sprintf("%d of %d", r.Compared-len(r.Diffs)-r.NotImplemented, r.Compared-r.NotImplemented)
		if r.Verdict != Agrees {
			verdict = "**" + verdict + "**"
		}
		if r.Verdict == Unmeasured || r.CheckFailed {
			kept = cell(r.Why)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %d | %s |\n", r.Name, cell(r.Area), impl, verdict, kept, r.NotImplemented, took(r.Took))
	}
	for _, r := range rows {
		if r.Verdict == Agrees {
			continue
		}
		fmt.Fprintf(w, "\n!!! %s %s\n    allowed: %s\n    choice: %s\n", r.Verdict, r.Name, r.Allowed, r.Choice)
		if r.Verdict == Unmeasured || r.CheckFailed {
			fmt.Fprintf(w, "    why: %s\n", r.Why)
			continue
		}
		for _, d := range r.Diffs {
			fmt.Fprintf(w, "    %s: %s, want %s: %s\n", d.ID, d.Got, d.Want, d.Why)
		}
	}
}

// runCorrect is main for --expect pass; it returns the exit code.
func runCorrect(patches, results, out string, scope Scope, base Baseline) int {
	plan, err := testplan.Load()
	if err != nil {
		fmt.Fprintf(os.Stderr, "killmatrix: %v\n", err)
		return 2
	}
	rows, err := collectCorrect(patches, results, scope, base, plan)
	if err != nil {
		fmt.Fprintf(os.Stderr, "killmatrix: %v\n", err)
		return 2
	}
	var b strings.Builder
	renderCorrect(&b, scope, base, rows)
	fmt.Print(b.String())
	if out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "killmatrix: %v\n", err)
			return 2
		}
	}
	if failedCorrect(base, rows) {
		return 1
	}
	return 0
}
