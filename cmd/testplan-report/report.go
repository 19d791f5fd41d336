package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/workload-aware/apps-harness/testplan"
)

// The report reads a Ginkgo JUnit file (specs run against the cluster under
// test) and a `go test -json` stream (unit tests of the reference
// implementation); either may be missing, and the report says so. The
// stream is read when named by --unit-json, or by --unit-json-if-fresh when
// its stamp says it belongs to this run (same source tree, written after
// --run-started): a unit.json left over from another commit or day must not
// speak for the cluster under test. The mode comes from environment.json:
// against a cluster given by kubeconfig (vendor mode) only specs can make an
// id PASS.
//
// The JUnit file is checked the same way whenever --run-started is given:
// hack/e2e.sh stamps junit_e2e.xml (junit_e2e.stamp.json: source tree, suite
// start), and a JUnit without that stamp, of another source tree or of an
// earlier run is ignored, loudly, so it makes no id PASS. A JUnit of a
// Ginkgo dry run (its DryRun property) makes every spec SKIP ("dry run").

type reportFlags struct {
	junit, unitJSON, freshUnitJSON, source, runStarted string
	out, html, envPath, mode, failOn, allowSkip        string
	htmlSet                                            bool
}

func parseReportFlags(args []string) (*reportFlags, error) {
	f := &reportFlags{}
	fs := flag.NewFlagSet("testplan-report", flag.ContinueOnError)
	fs.StringVar(&f.junit, "junit", "_artifacts/junit_e2e.xml", "Ginkgo JUnit XML report (missing file: contributes nothing)")
	fs.StringVar(&f.unitJSON, "unit-json", "", "`go test -json` output to read as given, whichever run wrote it")
	fs.StringVar(&f.freshUnitJSON, "unit-json-if-fresh", "", "`go test -json` output to read only if its stamp (make test) says it belongs to this run: --source and --run-started")
	fs.StringVar(&f.source, "source", "", "source id of this run (testplan-report source-id when the suite was built; default: the current tree's)")
	fs.StringVar(&f.runStarted, "run-started", "", "when this run started, RFC 3339 or Unix seconds (needed by --unit-json-if-fresh); when given, the JUnit is read only if its stamp (hack/e2e.sh) says it belongs to this run")
	fs.StringVar(&f.out, "out", "_artifacts/testplan.md", "markdown report to write")
	fs.StringVar(&f.html, "html", "", "HTML report to write (default: --out with .html; empty when given: none)")
	fs.StringVar(&f.envPath, "environment", "", "environment record written by the suite (default: environment.json next to --junit; missing file: not recorded)")
	fs.StringVar(&f.mode, "mode", "auto", "auto (from the environment record: harness only on the suite's own local cluster), vendor or harness")
	fs.StringVar(&f.failOn, "fail-on", "FAIL", "comma-separated statuses that make the exit status 1, e.g. FAIL,MISSING; empty: never")
	fs.StringVar(&f.allowSkip, "allow-skip", os.Getenv("ALLOW_SKIP"), "ids allowed not to pass, with the reason the report keeps: \"S-P8=why; D-E6=why\" (a FAIL is never allowed) (env ALLOW_SKIP)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	fs.Visit(func(fl *flag.Flag) { f.htmlSet = f.htmlSet || fl.Name == "html" })
	if !f.htmlSet {
		f.html = strings.TrimSuffix(f.out, filepath.Ext(f.out)) + ".html"
	}
	if f.unitJSON != "" && f.freshUnitJSON != "" {
		return nil, errors.New("--unit-json and --unit-json-if-fresh: give one")
	}
	if f.envPath == "" {
		f.envPath = filepath.Join(filepath.Dir(f.junit), testplan.EnvironmentFile)
	}
	return f, nil
}

func reportCmd(args []string) int {
	f, err := parseReportFlags(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 2
		}
		return fail("%v", err)
	}
	failStatuses, err := parseStatuses(f.failOn)
	if err != nil {
		return fail("--fail-on: %v", err)
	}
	allowed, err := testplan.ParseAllowed(f.allowSkip)
	if err != nil {
		return fail("--allow-skip (ALLOW_SKIP): %v", err)
	}
	rep, results, err := buildReport(f)
	if err != nil {
		return fail("%v", err)
	}
	unknown, passed := rep.Allow(allowed)
	if len(unknown) > 0 {
		return fail("--allow-skip (ALLOW_SKIP) names ids the test plan does not have: %s", strings.Join(unknown, ", "))
	}
	if len(passed) > 0 {
		fmt.Fprintf(os.Stderr, "testplan-report: allowed not to pass, but passed: %s (drop them from ALLOW_SKIP)\n", strings.Join(passed, ", "))
	}
	if err := writeReports(rep, f); err != nil {
		return fail("%v", err)
	}
	printSummary(rep, results, f)
	// An allowance covers what did not run, never a FAIL (testplan.Allow).
	counts := rep.CountsNotAllowed()
	var hit []string
	for _, st := range failStatuses {
		if counts[st] > 0 {
			hit = append(hit, fmt.Sprintf("%s %d", st, counts[st]))
		}
	}
	if len(hit) > 0 {
		fmt.Fprintf(os.Stderr, "testplan-report: --fail-on %s: %s\n", f.failOn, strings.Join(hit, ", "))
		return 1
	}
	return 0
}

func parseStatuses(list string) ([]testplan.Status, error) {
	var out []testplan.Status
	for _, s := range strings.Split(list, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		st, err := testplan.ParseStatus(s)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// thisRun is the run of --source and --run-started; nil without --run-started.
func thisRun(f *reportFlags) (*testplan.Run, error) {
	if f.runStarted == "" {
		return nil, nil
	}
	started, err := parseTime(f.runStarted)
	if err != nil {
		return nil, fmt.Errorf("--run-started: %w", err)
	}
	source := f.source
	if source == "" {
		// Without a source id no file can be matched: CheckFresh says so.
		source, _ = testplan.SourceID(".")
	}
	return &testplan.Run{Source: source, Started: started}, nil
}

// unitInput turns the flags into what ReadInputsOf needs of the unit tests.
func unitInput(f *reportFlags, run *testplan.Run) (testplan.UnitJSON, error) {
	if f.freshUnitJSON == "" {
		return testplan.UnitJSON{Path: f.unitJSON, Explicit: f.unitJSON != ""}, nil
	}
	if run == nil {
		return testplan.UnitJSON{}, errors.New("--unit-json-if-fresh needs --run-started")
	}
	return testplan.UnitJSON{Path: f.freshUnitJSON, Run: *run}, nil
}

func buildReport(f *reportFlags) (*testplan.Report, []testplan.TestResult, error) {
	plan, err := testplan.Load()
	if err != nil {
		return nil, nil, err
	}
	run, err := thisRun(f)
	if err != nil {
		return nil, nil, err
	}
	unit, err := unitInput(f, run)
	if err != nil {
		return nil, nil, err
	}
	results, inputs, err := testplan.ReadInputsOf(testplan.JUnitInput{Path: f.junit, Run: run}, unit)
	if err != nil {
		return nil, nil, err
	}
	env, err := testplan.ReadEnvironment(f.envPath)
	if err != nil {
		return nil, nil, err
	}
	mode := testplan.ModeOf(env)
	switch f.mode {
	case "auto":
	case string(testplan.ModeVendor), string(testplan.ModeHarness):
		mode = testplan.Mode(f.mode)
	default:
		return nil, nil, fmt.Errorf("--mode %q: want auto, vendor or harness", f.mode)
	}
	rep := testplan.Aggregate(plan, results, testplan.Options{Mode: mode, ReferenceNotRead: referenceNotRead(inputs[1])})
	rep.Inputs, rep.Environment = inputs, env
	return rep, results, nil
}

// referenceNotRead says why the unit tests were not read ("" when they were).
func referenceNotRead(in testplan.Input) string {
	switch in.State {
	case testplan.InputRead:
		return ""
	case testplan.InputNotFound:
		return in.Path + " was not found (make test writes it)"
	case testplan.InputIgnored:
		return in.Path + " does not belong to this run: " + in.Note
	}
	return "no go test -json input was given (make test writes unit.json)"
}

func writeReports(rep *testplan.Report, f *reportFlags) error {
	var md, page bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		return fmt.Errorf("rendering the report: %w", err)
	}
	if err := rep.WriteHTML(&page); err != nil {
		return fmt.Errorf("rendering the HTML report: %w", err)
	}
	for path, data := range map[string][]byte{f.out: md.Bytes(), f.html: page.Bytes()} {
		if path == "" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("writing the report: %w", err)
		}
	}
	return nil
}

func printSummary(rep *testplan.Report, results []testplan.TestResult, f *reportFlags) {
	for _, in := range rep.Inputs {
		if !in.Used() {
			fmt.Printf("%s: %s\n", in.Source, inputState(in))
		}
		if in.Source == testplan.SourceJUnit && in.State == testplan.InputIgnored {
			// Loudly: every spec id of the report is now without evidence.
			fmt.Fprintf(os.Stderr, "testplan-report: WARNING: the JUnit report %s was ignored, so no spec counts: %s\n", in.Path, in.Note)
		}
	}
	fmt.Printf("mode: %s\n", rep.ModeSentence())
	fmt.Println(rep.SummaryLine())
	for _, sf := range rep.SuiteFailures {
		fmt.Printf("suite-level failure: %s %s: %s\n", sf.Source, sf.DisplayName(), sf.Reason)
	}
	if n := len(rep.Unknown); n > 0 {
		ids := make([]string, n)
		for i, u := range rep.Unknown {
			ids[i] = u.ID
		}
		fmt.Printf("unknown ids (not in the test plan): %s\n", strings.Join(ids, ", "))
	}
	fmt.Printf("report written to %s", f.out)
	if f.html != "" {
		fmt.Printf(" and %s", f.html)
	}
	fmt.Println()
	// A closing line in the plain "N passed, N failed" form CI logs are read for.
	specs := map[testplan.Status]int{}
	for _, r := range results {
		if r.Source == testplan.SourceJUnit && !r.SuiteLevel {
			specs[r.Status]++
		}
	}
	fmt.Printf("e2e: %d passed, %d failed, %d skipped, %d not implemented\n", specs[testplan.StatusPass], specs[testplan.StatusFail], specs[testplan.StatusSkip], specs[testplan.StatusNotImplemented])
}

func inputState(in testplan.Input) string {
	switch in.State {
	case testplan.InputIgnored:
		return fmt.Sprintf("%s ignored: %s", in.Path, in.Note)
	case testplan.InputNotFound:
		return in.Path + " not found, contributes nothing"
	}
	return "not given"
}
