package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// testEvent is one line of `go test -json`.
type testEvent struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// testSummary prints every failed test with its output, every package that
// failed to build, and a closing "N passed, N failed, N skipped" line. It
// returns an error when anything failed, so it can gate a Makefile target.
func testSummary(path string, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	output := map[string]*strings.Builder{}
	results := map[string]string{}
	var failedPkgs []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e testEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // build output interleaved by `go test` is not JSON
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			if output[key] == nil {
				output[key] = &strings.Builder{}
			}
			output[key].WriteString(e.Output)
		case "pass", "fail", "skip":
			if e.Test == "" {
				if e.Action == "fail" {
					failedPkgs = append(failedPkgs, e.Package)
				}
				continue
			}
			results[key] = e.Action
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	counts := map[string]int{}
	var failed []string
	for key, r := range results {
		counts[r]++
		if r == "fail" {
			failed = append(failed, key)
		}
	}
	sort.Strings(failed)
	for _, key := range failed {
		fmt.Fprintf(w, "--- FAIL %s\n%s\n", key, output[key])
	}
	for _, p := range failedPkgs {
		if b := output[p+" "]; b != nil && !strings.Contains(b.String(), "--- FAIL") {
			fmt.Fprintf(w, "--- FAIL package %s\n%s\n", p, b)
		}
	}
	fmt.Fprintf(w, "unit: %d passed, %d failed, %d skipped\n", counts["pass"], counts["fail"]+len(failedPkgs)-countPkgsWithFailedTests(failedPkgs, failed), counts["skip"])
	if counts["fail"] > 0 || len(failedPkgs) > 0 {
		return fmt.Errorf("unit tests failed (details above; full stream in %s)", path)
	}
	return nil
}

// countPkgsWithFailedTests counts failed packages already accounted for by a
// failed test, so a package failure is counted once.
func countPkgsWithFailedTests(pkgs, failedTests []string) int {
	n := 0
	for _, p := range pkgs {
		for _, t := range failedTests {
			if strings.HasPrefix(t, p+" ") {
				n++
				break
			}
		}
	}
	return n
}
