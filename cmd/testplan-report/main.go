// Command testplan-report maps test results onto the KEP-6276/KEP-6277 test
// plan and writes a markdown coverage report.
//
// Inputs are a Ginkgo JUnit file (--ginkgo.junit-report) and a `go test -json`
// stream; either may be missing, in which case the report says so and the
// input contributes nothing. The report starts with the environment the suite
// recorded (environment.json: server version, gates, implementation), then
// lists every id with its result and the specs or unit tests that prove it.
// Exit status: 0 on success, 1 when an item has a status listed in --fail-on
// (default FAIL), 2 on usage or parse errors.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/workload-aware/apps-harness/testplan"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("testplan-report", flag.ContinueOnError)
	junit := fs.String("junit", "_artifacts/junit_e2e.xml", "Ginkgo JUnit XML report (missing file: contributes nothing)")
	unitJSON := fs.String("unit-json", "_artifacts/unit.json", "`go test -json` output (missing file: contributes nothing)")
	out := fs.String("out", "_artifacts/testplan.md", "markdown report to write")
	envPath := fs.String("environment", "", "environment record written by the suite (default: environment.json next to --junit; missing file: not recorded)")
	failOn := fs.String("fail-on", "FAIL", "comma-separated statuses (PASS, FAIL, SKIP, MISSING) that make the exit status 1, e.g. FAIL,MISSING; empty: never")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "testplan-report: unexpected arguments: %s\n", strings.Join(fs.Args(), " "))
		return 2
	}

	var failStatuses []testplan.Status
	for _, s := range strings.Split(*failOn, ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		st, err := testplan.ParseStatus(s)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testplan-report: --fail-on: %v\n", err)
			return 2
		}
		failStatuses = append(failStatuses, st)
	}

	plan, err := testplan.Load()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testplan-report: %v\n", err)
		return 2
	}
	results, inputs, err := testplan.ReadInputs(*junit, *unitJSON)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testplan-report: %v\n", err)
		return 2
	}
	rep := testplan.Aggregate(plan, append(results, testplan.UnitTestsNotRun(plan, inputs)...))
	rep.Inputs = inputs
	if *envPath == "" {
		*envPath = filepath.Join(filepath.Dir(*junit), testplan.EnvironmentFile)
	}
	if rep.Environment, err = testplan.ReadEnvironment(*envPath); err != nil {
		fmt.Fprintf(os.Stderr, "testplan-report: %v\n", err)
		return 2
	}

	var buf bytes.Buffer
	if err := rep.WriteMarkdown(&buf); err != nil {
		fmt.Fprintf(os.Stderr, "testplan-report: rendering report: %v\n", err)
		return 2
	}
	if dir := filepath.Dir(*out); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintf(os.Stderr, "testplan-report: %v\n", err)
			return 2
		}
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "testplan-report: writing report: %v\n", err)
		return 2
	}

	for _, in := range inputs {
		switch {
		case in.Path == "":
			fmt.Printf("%s: not given\n", in.Source)
		case !in.Found:
			fmt.Printf("%s: %s not found, contributes nothing\n", in.Source, in.Path)
		}
	}
	fmt.Println(rep.SummaryLine())
	for _, f := range rep.SuiteFailures {
		fmt.Printf("suite-level failure: %s %s: %s\n", f.Source, f.DisplayName(), f.Reason)
	}
	if n := len(rep.Unknown); n > 0 {
		ids := make([]string, n)
		for i, u := range rep.Unknown {
			ids[i] = u.ID
		}
		fmt.Printf("unknown ids (not in the test plan): %s\n", strings.Join(ids, ", "))
	}
	fmt.Printf("report written to %s\n", *out)
	// A closing line in the plain "N passed, N failed" form CI logs are read for.
	specs := map[testplan.Status]int{}
	for _, r := range results {
		if r.Source == testplan.SourceJUnit && !r.SuiteLevel {
			specs[r.Status]++
		}
	}
	fmt.Printf("e2e: %d passed, %d failed, %d skipped\n", specs[testplan.StatusPass], specs[testplan.StatusFail], specs[testplan.StatusSkip])

	counts := rep.Counts()
	var hit []string
	for _, st := range failStatuses {
		if counts[st] > 0 {
			hit = append(hit, fmt.Sprintf("%s %d", st, counts[st]))
		}
	}
	if len(hit) > 0 {
		fmt.Fprintf(os.Stderr, "testplan-report: --fail-on %s: %s\n", *failOn, strings.Join(hit, ", "))
		return 1
	}
	return 0
}
