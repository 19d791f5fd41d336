package testplan

import (
	"fmt"
	"strings"
	"testing"
)

// fullReport reads both fixtures (a JUnit report and a go test -json
// stream) into a report in the given mode, with many tests naming S-V7 so
// that its evidence list is cut short.
func fullReport(t *testing.T, mode Mode) *Report {
	t.Helper()
	junit := writeFile(t, "junit.xml", junitFixture)
	unit := writeFile(t, "unit.json", goTestFixture)
	results, inputs, err := ReadInputs(junit, UnitJSON{Path: unit, Explicit: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		results = append(results, unitTest(fmt.Sprintf("TestMany/S-V7_case_%d", i), StatusPass, "", "S-V7"))
	}
	rep := Aggregate(loadPlan(t), results, Options{Mode: mode})
	rep.Inputs = inputs
	return rep
}

func markdownRows(md string) map[string]string {
	rows := map[string]string{}
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| ") {
			rows[strings.TrimSpace(strings.SplitN(line[2:], "|", 2)[0])] = line
		}
	}
	return rows
}

func TestWriteMarkdownFull(t *testing.T) {
	rep := fullReport(t, ModeHarness)
	md := markdown(t, rep)
	rows := markdownRows(md)
	for _, it := range rep.Plan.Items {
		if want := fmt.Sprintf("| %s | %s | ", it.ID, it.Level); !strings.HasPrefix(rows[it.ID], want) {
			t.Errorf("row for %s = %q, want prefix %q", it.ID, rows[it.ID], want)
		}
	}
	for _, s := range []string{
		"# Conformance report: kep-6276, kep-6277\n\n**" + rep.SummaryLine() + "**\n\nMode: harness:",
		"- REFERENCE-ONLY: only the reference implementation's unit tests prove it",
		"## Environment\n\nNot recorded (no environment.json next to the JUnit report).",
		"Ginkgo JUnit (against the cluster under test): ", " (9 test results)",
		"go test -json (reference implementation only): ", " (11 test results); given explicitly, so read without checking that it belongs to this run",
		"| id | level | result | against the cluster under test | reference implementation only | item |",
		"| D-E1 | e2e | SKIP | Deployment skips (SKIP: needs a kubelet) | none |",
		"| D-U2 | unit | SKIP | none | TestBuild/D-U2_skip (SKIP: u_test.go:7: needs a kubelet) |",
		"| D-I3 | integration | FAIL | Deployment fails (FAIL: Expected &lt;int&gt;: 1 to equal &lt;int&gt;: 2) | none |",
		"| D-I2 | integration | PASS | Deployment D-I2 creation ordering | none |",
		"| D-U1 | unit | PASS | none | TestBuild/D-U1_compiles_constraints |",
		"| S-E1 | e2e | PASS | StatefulSet \\| piped | none |",
		"| S-V7 | unit | PASS | none | TestMany/S-V7_case_0<br>TestMany/S-V7_case_1<br>TestMany/S-V7_case_2<br>TestMany/S-V7_case_3<br>… (+2 more) |",
		"| S-U16 | unit | FAIL | none | TestRepeat/S-U16 (FAIL: repeat_test.go:5: flaked)<br>TestRepeat/S-U16 |",
		"| S-P9 | prr | MISSING | none | none |",
		"## Unknown ids",
		"| S-E99 | StatefulSet typo (PASS) |",
		"- go test -json, package (example.com/gk/bf): build failed",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q", s)
		}
	}
	if strings.Index(md, "## kep-6276") > strings.Index(md, "## kep-6277") || strings.Index(md, "## kep-6277") > strings.Index(md, "## Unknown ids") {
		t.Errorf("sections out of order")
	}
	if t.Failed() {
		t.Log("\n" + md)
	}
}

// In vendor mode the same unit tests are shown, by name, as REFERENCE-ONLY.
func TestWriteMarkdownVendorShowsReferenceOnly(t *testing.T) {
	md := markdown(t, fullReport(t, ModeVendor))
	rows := markdownRows(md)
	for id, want := range map[string]string{
		"D-U1": "| D-U1 | unit | REFERENCE-ONLY | none | TestBuild/D-U1_compiles_constraints |",
		"D-U3": "| D-U3 | unit | MISSING | none | TestBuild/D-U3_fail (FAIL: u_test.go:8: bad) |",
		"D-I2": "| D-I2 | integration | PASS | Deployment D-I2 creation ordering | none |",
	} {
		if !strings.HasPrefix(rows[id], want) {
			t.Errorf("%s row %q, want prefix %q", id, rows[id], want)
		}
	}
	if !strings.Contains(md, "Mode: vendor: only specs run against the cluster under test can make an id PASS") {
		t.Errorf("markdown does not say what vendor mode means")
	}
}
