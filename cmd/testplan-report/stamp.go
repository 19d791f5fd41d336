package main

import (
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/workload-aware/apps-harness/testplan"
)

// stampCmd writes the stamp beside a result file: a go test -json file
// (make test) or a Ginkgo JUnit report (hack/e2e.sh): which source tree the
// tests were built from and when they started.
func stampCmd(args []string) int {
	fs := flag.NewFlagSet("testplan-report stamp", flag.ContinueOnError)
	unitJSON := fs.String("unit-json", "", "the go test -json file to stamp")
	junit := fs.String("junit", "", "the Ginkgo JUnit report to stamp (instead of --unit-json)")
	source := fs.String("source", "", "source id the tests were built from, taken before they ran (default: the current tree's, now)")
	started := fs.String("started", "", "when the tests started: RFC 3339 or Unix seconds (required)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if (*unitJSON == "") == (*junit == "") || *started == "" || fs.NArg() > 0 {
		return fail("stamp: usage: stamp {--unit-json FILE | --junit FILE} --started TIME [--source ID]")
	}
	if *junit != "" {
		unitJSON = junit
	}
	t, err := parseTime(*started)
	if err != nil {
		return fail("stamp: --started: %v", err)
	}
	if *source == "" {
		if *source, err = testplan.SourceID("."); err != nil {
			return fail("stamp: %v", err)
		}
	}
	if err := testplan.WriteStamp(*unitJSON, *source, t); err != nil {
		return fail("stamp: %v", err)
	}
	fmt.Printf("stamped %s: source %s, tests started %s\n", *unitJSON, *source, t.UTC().Format(time.RFC3339))
	return 0
}

// sourceIDCmd prints testplan.SourceID of the current directory.
func sourceIDCmd(args []string) int {
	if len(args) > 0 {
		return fail("source-id takes no arguments")
	}
	id, err := testplan.SourceID(".")
	if err != nil {
		return fail("source-id: %v", err)
	}
	fmt.Println(id)
	return 0
}

// parseTime accepts RFC 3339 (date -u +%FT%TZ) or Unix seconds (date +%s).
func parseTime(s string) (time.Time, error) {
	if secs, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(secs, 0), nil
	}
	return time.Parse(time.RFC3339, s)
}
