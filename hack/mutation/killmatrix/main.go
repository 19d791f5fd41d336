// Command killmatrix prints the kill matrix of `make mutation`: for each
// deliberately wrong variant of the reference implementation
// (hack/mutation/NN-name.patch), the specs of the vendor-mode suite that
// failed against it. A variant no spec failed against SURVIVED: the suite
// cannot tell that implementation from a correct one.
//
//	killmatrix --patches hack/mutation --results DIR [--scope all|ids] [--baseline DIR] [--out FILE]
//
// --scope says which specs the runs selected (MUTATION_SCOPE): the whole
// vendor-mode suite (all), or each variant only the specs of its header's
// ids (ids); the matrix states it, since a kill means something else in each.
//
// DIR holds one directory per variant run, named like its patch without
// ".patch", and the baseline's, "reference" (the unmutated implementation,
// the default --baseline), with the files hack/mutation.sh writes there:
//
//	outcome          first line: ran <exit code> | check-failed | not-applied |
//	                 build-failed | cluster-failed | no-specs; further lines: details
//	junit_e2e.xml    the suite's JUnit report (outcome "ran")
//	label-filter     the effective label filter of the run
//	seconds          how long the run took, cluster start and stop included
//
// A spec that fails against the baseline too kills nothing: it is listed
// apart, and a variant only such specs fail against SURVIVED. Without a
// baseline every failed spec counts, and the matrix says so.
//
// The matrix goes to stdout and, with --out, to FILE (Markdown). The exit
// code is 1 when a variant survived or could not be measured (its patch did
// not apply, it did not build, its cluster did not start, its ids select no
// spec, or the suite failed without a failing spec) or when the baseline is not green, 0 when
// every variant run was killed.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/workload-aware/apps-harness/hack/mutation/variant"
	"github.com/workload-aware/apps-harness/testplan"
)

func main() {
	patches := flag.String("patches", "hack/mutation", "directory of the NN-name.patch variants")
	results := flag.String("results", "", "directory with one NN-name/ directory per variant run")
	baseline := flag.String("baseline", "", "the unmutated implementation's run (default: <results>/reference when it exists)")
	out := flag.String("out", "", "also write the matrix (Markdown) to this file")
	scopeName := flag.String("scope", string(ScopeAll), "which specs each variant ran: all (the whole vendor-mode suite) or ids (the specs labelled with its # Ids:)")
	expect := flag.String("expect", string(ExpectKill), "kill: wrong variants, each must make a spec fail (the kill matrix); pass: correct variants, each must pass every id the reference passes")
	flag.Parse()
	if *results == "" {
		fmt.Fprintln(os.Stderr, "killmatrix: --results is required")
		os.Exit(2)
	}
	scope := Scope(*scopeName)
	if scope != ScopeAll && scope != ScopeIDs {
		fmt.Fprintf(os.Stderr, "killmatrix: --scope=%s: want all or ids\n", *scopeName)
		os.Exit(2)
	}
	base, err := readBaseline(*baseline, *results)
	if err != nil {
		fmt.Fprintf(os.Stderr, "killmatrix: %v\n", err)
		os.Exit(2)
	}
	if Expect(*expect) == ExpectPass {
		os.Exit(runCorrect(*patches, *results, *out, scope, base))
	} else if Expect(*expect) != ExpectKill {
		fmt.Fprintf(os.Stderr, "killmatrix: --expect=%s: want kill or pass\n", *expect)
		os.Exit(2)
	}
	rows, err := collect(*patches, *results, base)
	if err != nil {
		fmt.Fprintf(os.Stderr, "killmatrix: %v\n", err)
		os.Exit(2)
	}
	var b strings.Builder
	render(&b, scope, base, rows)
	fmt.Print(b.String())
	if *out != "" {
		if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "killmatrix: %v\n", err)
			os.Exit(2)
		}
	}
	if failed(base, rows) {
		os.Exit(1)
	}
}

// Scope is which specs each variant's run selected (MUTATION_SCOPE).
type Scope string

const (
	// ScopeAll: the whole vendor-mode suite, for every variant.
	ScopeAll Scope = "all"
	// ScopeIDs: for each variant, only the specs labelled with one of the
	// ids of its header (# Ids:); the baseline ran their union.
	ScopeIDs Scope = "ids"
)

// sentence says, in the kill matrix, what a kill or a survivor means in s.
func (s Scope) sentence() string {
	return s.describe("the specs meant for the rule it breaks", "whether those specs catch the rule, not what the whole suite catches: a survivor here may still be killed by another spec",
		"what the suite as a whole catches")
}

// correctSentence says, in the correct-variant matrix, what agreeing means
// in s.
func (s Scope) correctSentence() string {
	return s.describe("the specs its choice touches", "whether those specs accept the choice, not the whole suite: another spec may still fail it",
		"whether the suite as a whole accepts the choice")
}

// describe is the scope's sentence for either matrix: which specs each
// variant ran (ids: which specs those are, then what that measures), or
// what the whole suite measures (all).
func (s Scope) describe(specs, idsMeasure, allMeasure string) string {
	if s == ScopeIDs {
		return "Scope: **ids**. Each variant ran only the specs labelled with the test-plan ids of its header (`# Ids:`), " +
			specs + "; the baseline ran their union. This measures " + idsMeasure + " (MUTATION_SCOPE=all)."
	}
	return "Scope: **all**. Each variant ran the whole vendor-mode suite: this measures " + allMeasure + "."
}

// Verdict is what a variant's run says about the suite.
type Verdict string

const (
	// Killed: at least one spec (or the prerequisite check) failed.
	Killed Verdict = "killed"
	// Survived: the suite passed against the wrong implementation.
	Survived Verdict = "SURVIVED"
	// Unmeasured: the run says nothing (patch, build, cluster or suite error).
	Unmeasured Verdict = "NOT MEASURED"
)

// Row is one variant's line of the matrix.
type Row struct {
	variant.Variant
	Verdict Verdict
	// Why explains an Unmeasured verdict, or names the check that killed it.
	Why string
	// Failed are the specs that killed it (failed against it, passed or did
	// not run against the baseline), as the report names them, with ids.
	Failed []string
	// AlsoOnReference failed against the baseline too: they kill nothing.
	AlsoOnReference []string
	LabelFilter     string
	// Took is how long the run took, cluster start and stop included (0:
	// not recorded).
	Took time.Duration
	// CheckFailed: the prerequisite check refused the cluster, so no spec ran.
	CheckFailed bool
	// Results are the run's spec results (nil unless the suite ran).
	Results []testplan.TestResult
}

// Baseline is the run of the unmutated implementation.
type Baseline struct {
	// Present is false when there was no baseline run.
	Present bool
	// Verdict is Killed when a spec failed against it (the suite is not
	// green on the reference), Survived when it passed, Unmeasured otherwise.
	Row
	failed map[string]bool
}

// readBaseline reads dir, or <results>/reference when dir is empty and it
// exists.
func readBaseline(dir, results string) (Baseline, error) {
	if dir == "" {
		dir = filepath.Join(results, "reference")
		if _, err := os.Stat(filepath.Join(dir, "outcome")); errors.Is(err, fs.ErrNotExist) {
			return Baseline{}, nil
		}
	}
	row, err := readRow(variant.Variant{Name: "reference"}, dir, Baseline{})
	if err != nil {
		return Baseline{}, fmt.Errorf("baseline %s: %w", dir, err)
	}
	b := Baseline{Present: true, Row: row, failed: map[string]bool{}}
	for _, r := range row.Results {
		if r.Status == testplan.StatusFail {
			b.failed[specName(r)] = true
		}
	}
	return b, nil
}

// collect reads every variant that has a result directory, in patch order.
func collect(patchDir, resultDir string, base Baseline) ([]Row, error) {
	variants, err := variant.ReadAll(patchDir)
	if err != nil {
		return nil, err
	}
	var rows []Row
	for _, v := range variants {
		dir := filepath.Join(resultDir, v.Name)
		if _, err := os.Stat(filepath.Join(dir, "outcome")); errors.Is(err, fs.ErrNotExist) {
			continue // not selected in this run
		}
		row, err := readRow(v, dir, base)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func readRow(v variant.Variant, dir string, base Baseline) (Row, error) {
	row := Row{Variant: v}
	data, err := os.ReadFile(filepath.Join(dir, "outcome"))
	if err != nil {
		return row, err
	}
	if lf, err := os.ReadFile(filepath.Join(dir, "label-filter")); err == nil {
		row.LabelFilter = strings.TrimSpace(string(lf))
	}
	if secs, err := os.ReadFile(filepath.Join(dir, "seconds")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(secs))); err == nil {
			row.Took = time.Duration(n) * time.Second
		}
	}
	first, details, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
	details = strings.TrimSpace(details)
	word, code, _ := strings.Cut(first, " ")
	switch word {
	case "check-failed":
		row.CheckFailed = true
		row.Why = "the prerequisite check (was-harness conformance --check-only)"
		if details != "" {
			row.Why += ": " + firstLine(details)
		}
		// The check kills a variant only if the unmutated reference passed
		// the same check: otherwise it says nothing about the variant.
		switch {
		case v.Name == "reference" || base.Present && !base.CheckFailed:
		case base.Present:
			row.Verdict, row.Why = Unmeasured, row.Why+" (the baseline failed the same check, so it proves nothing about this variant)"
			return row, nil
		default:
			row.Verdict, row.Why = Unmeasured, row.Why+" (no baseline ran the check: a check failure counts as a kill only where the unmutated reference passed it)"
			return row, nil
		}
		row.Verdict = Killed
		row.Failed = []string{row.Why}
		return row, nil
	case "ran":
	default:
		row.Verdict, row.Why = Unmeasured, word
		if details != "" {
			row.Why += ": " + firstLine(details)
		}
		return row, nil
	}
	results, err := testplan.ReadJUnit(filepath.Join(dir, "junit_e2e.xml"))
	if err != nil {
		row.Verdict, row.Why = Unmeasured, fmt.Sprintf("the suite exited %s and left no readable JUnit report: %v", code, err)
		return row, nil
	}
	row.Results = results
	for _, r := range results {
		if r.Status != testplan.StatusFail {
			continue
		}
		name := specName(r)
		if base.failed[name] {
			row.AlsoOnReference = append(row.AlsoOnReference, name)
			continue
		}
		row.Failed = append(row.Failed, name+": "+message(r.Reason))
	}
	switch {
	case len(row.Failed) > 0:
		row.Verdict = Killed
	case code == "0" || len(row.AlsoOnReference) > 0:
		row.Verdict = Survived
	default:
		row.Verdict, row.Why = Unmeasured, fmt.Sprintf("the suite exited %s but no spec failed (timeout or interrupt? see e2e.log)", code)
	}
	return row, nil
}

// specName is how the matrix names a spec: its text and its ids.
func specName(r testplan.TestResult) string {
	name := r.DisplayName()
	if len(r.IDs) > 0 {
		name += " [" + strings.Join(r.IDs, ", ") + "]"
	}
	return name
}

// message is the first line of a failure message, at most 200 characters:
// enough to tell in the matrix why the spec failed.
func message(reason string) string {
	m := strings.TrimSpace(firstLine(strings.TrimSpace(reason)))
	if m == "" {
		return "(no message)"
	}
	if r := []rune(m); len(r) > 200 {
		m = string(r[:200]) + "…"
	}
	return m
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// failed: a variant was not killed, or the baseline is not green.
func failed(base Baseline, rows []Row) bool {
	if base.Present && base.Verdict != Survived {
		return true
	}
	return slices.ContainsFunc(rows, func(r Row) bool { return r.Verdict != Killed })
}

// render writes the matrix: a summary line, one table row per variant (the
// killing specs in it), then the survivors and unmeasured variants again,
// loudly, with the rule each one breaks.
func render(w io.Writer, scope Scope, base Baseline, rows []Row) {
	count := map[Verdict]int{}
	for _, r := range rows {
		count[r.Verdict]++
	}
	fmt.Fprintf(w, "# Mutation kill matrix\n\n")
	fmt.Fprintf(w, "%d variants run: %d killed, %d SURVIVED, %d not measured.\n\n", len(rows), count[Killed], count[Survived], count[Unmeasured])
	fmt.Fprintf(w, "%s\n\n", scope.sentence())
	renderBaseline(w, base, "No baseline run: a spec that fails against the unmutated reference too is counted as a kill.", "; they kill no variant")
	fmt.Fprintf(w, "| Variant | Area | Ids (its rule's specs) | Verdict | Specs that failed against it | Time |\n|---|---|---|---|---|---|\n")
	for _, r := range rows {
		verdict := string(r.Verdict)
		if r.Verdict == Killed {
			verdict = fmt.Sprintf("killed (%d)", len(r.Failed))
		} else {
			verdict = "**" + verdict + "**"
		}
		specs := strings.Join(r.Failed, "<br>")
		if r.Verdict != Killed {
			specs = r.Why
			if r.Verdict == Survived {
				specs = "none"
				if r.SeenBy != "" {
					specs += " (only " + r.SeenBy + " can see it)"
				}
			}
		}
		if len(r.AlsoOnReference) > 0 {
			specs += fmt.Sprintf(" (and %d failing on the reference too)", len(r.AlsoOnReference))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", r.Name, cell(r.Area), strings.Join(r.IDs, ", "), verdict, cell(specs), took(r.Took))
	}
	for _, r := range rows {
		if r.Verdict == Killed {
			continue
		}
		fmt.Fprintf(w, "\n!!! %s %s\n    rule: %s\n    mutant: %s\n    ids: %s\n", r.Verdict, r.Name, r.Rule, r.Mutant, strings.Join(r.IDs, ", "))
		if r.Verdict == Survived {
			fmt.Fprintf(w, "    label filter: %s\n", orNone(r.LabelFilter))
			if r.SeenBy != "" {
				fmt.Fprintf(w, "    only %s can see it\n", r.SeenBy)
			}
		} else {
			fmt.Fprintf(w, "    why: %s\n", r.Why)
		}
	}
}

// took is d for the table, "?" when it was not recorded.
func took(d time.Duration) string {
	if d == 0 {
		return "?"
	}
	return d.String()
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func orNone(s string) string {
	if s == "" {
		return "(none: every spec)"
	}
	return s
}

// renderBaseline writes the baseline's line of a matrix; absent is the
// sentence for no baseline run, failedNote what the baseline's failures mean.
func renderBaseline(w io.Writer, base Baseline, absent, failedNote string) {
	switch {
	case !base.Present:
		fmt.Fprintf(w, "%s\n\n", absent)
	case base.Verdict == Survived && len(base.AlsoOnReference) == 0:
		fmt.Fprintf(w, "Baseline (the unmutated reference): every spec passed (%s).\n\n", took(base.Took))
	case base.Verdict == Killed:
		fmt.Fprintf(w, "!!! Baseline (the unmutated reference): %d spec(s) FAILED%s:\n", len(base.Failed), failedNote)
		for _, s := range base.Failed {
			fmt.Fprintf(w, "!!!   %s\n", s)
		}
		fmt.Fprintln(w)
	default:
		fmt.Fprintf(w, "!!! Baseline (the unmutated reference) NOT MEASURED: %s\n\n", base.Why)
	}
}
