package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workload-aware/apps-harness/testplan"
)

// junitOf is a Ginkgo JUnit report with one testcase per id: "pass",
// "fail:<message>" or "skip:<reason>".
func junitOf(cases map[string]string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<testsuites>\n  <testsuite name=\"WAS\" package=\"/x\">\n    <properties><property name=\"SuiteLabels\" value=\"[]\"></property></properties>\n")
	for _, id := range []string{"D-I1", "S-I1"} {
		outcome, ok := cases[id]
		if !ok {
			continue
		}
		kep := map[byte]string{'D': "KEP-6276", 'S': "KEP-6277"}[id[0]]
		kind, text, _ := strings.Cut(outcome, ":")
		fmt.Fprintf(&b, "    <testcase name=\"[It] spec of %s [%s, %s]\" classname=\"WAS\" status=\"%s\" time=\"1\">", id, kep, id, map[string]string{"pass": "passed", "fail": "failed", "skip": "skipped"}[kind])
		switch kind {
		case "fail":
			fmt.Fprintf(&b, "<failure message=%q type=\"failed\">%s</failure>", text, text)
		case "skip":
			fmt.Fprintf(&b, "<skipped message=\"skipped - %s\"></skipped>", text)
		}
		b.WriteString("</testcase>\n")
	}
	b.WriteString("  </testsuite>\n</testsuites>\n")
	return b.String()
}

const correctHeader = `# Allowed (KEP-6277, Names): "the KEP gives no name"
# Choice: other names
# Area: names
# Ids: S-I1
`

func TestCorrectVariants(t *testing.T) {
	plan, err := testplan.Load()
	if err != nil {
		t.Fatal(err)
	}
	patches, results := t.TempDir(), t.TempDir()
	variants := map[string]struct {
		header, outcome string
		cases           map[string]string
		want            Verdict
		diffs           []string
	}{
		"01-agrees":        {correctHeader, "ran 0", map[string]string{"D-I1": "pass", "S-I1": "pass"}, Agrees, nil},
		"02-sts-only":      {correctHeader + "# Implements: KEP-6277\n", "ran 0", map[string]string{"D-I1": "skip:not implemented by the implementation under test: no Workload", "S-I1": "pass"}, Agrees, nil},
		"03-loses-an-id":   {correctHeader, "ran 1", map[string]string{"D-I1": "pass", "S-I1": "fail:rejection does not name the gate"}, FalsePositive, []string{"S-I1"}},
		"04-skips-an-id":   {correctHeader, "ran 0", map[string]string{"D-I1": "pass", "S-I1": "skip:needs a hook"}, FalsePositive, []string{"S-I1"}},
		"05-sts-only-fail": {correctHeader + "# Implements: KEP-6277\n", "ran 1", map[string]string{"D-I1": "fail:no Workload", "S-I1": "pass"}, FalsePositive, []string{"D-I1"}},
		"06-refused":       {correctHeader, "check-failed\nno ValidatingWebhookConfiguration", nil, FalsePositive, nil},
	}
	for name, v := range variants {
		write(t, filepath.Join(patches, name+".patch"), v.header+diff)
		write(t, filepath.Join(results, name, "outcome"), v.outcome+"\n")
		if v.cases != nil {
			write(t, filepath.Join(results, name, "junit_e2e.xml"), junitOf(v.cases))
		}
	}
	write(t, filepath.Join(results, "reference", "outcome"), "ran 0\n")
	write(t, filepath.Join(results, "reference", "junit_e2e.xml"), junitOf(map[string]string{"D-I1": "pass", "S-I1": "pass"}))
	base, err := readBaseline("", results)
	if err != nil || !base.Present {
		t.Fatalf("baseline: %+v, %v", base, err)
	}
	rows, err := collectCorrect(patches, results, ScopeAll, base, plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(variants) {
		t.Fatalf("%d rows, want %d", len(rows), len(variants))
	}
	for _, r := range rows {
		v := variants[r.Name]
		var ids []string
		for _, d := range r.Diffs {
			ids = append(ids, d.ID)
		}
		if r.Verdict != v.want || strings.Join(ids, ",") != strings.Join(v.diffs, ",") {
			t.Errorf("%s: %s, lost %v; want %s, lost %v (%+v)", r.Name, r.Verdict, ids, v.want, v.diffs, r)
		}
	}
	if !failedCorrect(base, rows) || failedCorrect(base, rows[:2]) {
		t.Error("the run must fail exactly when a correct variant is not agreed with")
	}
	// In the ids scope an id outside the variant's # Ids: is not compared
	// (03 lost S-I1, which it names; 05 lost D-I1, which it does not).
	idRows, err := collectCorrect(patches, results, ScopeIDs, base, plan)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range idRows {
		if r.Name == "05-sts-only-fail" && r.Verdict != Agrees || r.Name == "03-loses-an-id" && r.Verdict != FalsePositive {
			t.Errorf("ids scope, %s: %s %+v", r.Name, r.Verdict, r.Diffs)
		}
	}
	var b strings.Builder
	renderCorrect(&b, ScopeAll, base, rows)
	for _, s := range []string{
		"6 correct variants run: 2 agree with the reference, 4 FAIL A CORRECT IMPLEMENTATION, 0 not measured.",
		"| 02-sts-only | names | KEP-6277 | agrees | 1 of 1 | 1 |",
		"S-I1: FAIL, want PASS: FAIL spec of S-I1: rejection does not name the gate",
		"D-I1: FAIL, want not implemented (the variant implements KEP-6277 only)",
		"why: the prerequisite check (was-harness conformance --check-only): no ValidatingWebhookConfiguration",
	} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("matrix lacks %q:\n%s", s, b.String())
		}
	}
}
