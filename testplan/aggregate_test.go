package testplan

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// smallPlan has one item per case the aggregation tells apart.
func smallPlan(ids ...string) *Plan {
	p := &Plan{}
	for _, id := range ids {
		level := LevelE2E
		if strings.Contains(id, "-U") {
			level = LevelUnit
		}
		kep := "kep-6276"
		if strings.HasPrefix(id, "S-") {
			kep = "kep-6277"
		}
		p.Items = append(p.Items, Item{ID: id, KEP: kep, Level: level, Text: "item " + id})
	}
	return p
}

func spec(name string, st Status, reason string, ids ...string) TestResult {
	return TestResult{Source: SourceJUnit, Name: name, Status: st, Reason: reason, IDs: ids}
}

func unitTest(name string, st Status, reason string, ids ...string) TestResult {
	return TestResult{Source: SourceGoTest, Name: name, Status: st, Reason: reason, IDs: ids}
}

func statuses(rep *Report) map[string]Status {
	out := map[string]Status{}
	for _, r := range rep.Results {
		out[r.Item.ID] = r.Status
	}
	return out
}

// The cases of the issue: a spec that skipped makes an id PARTIAL, not PASS;
// a failure anywhere is FAIL; unit tests alone can make an id PASS only in
// harness mode.
var aggregateCases = []struct {
	id              string
	tests           []TestResult
	harness, vendor Status
}{
	{"D-E1", []TestResult{spec("a", StatusPass, "", "D-E1"), spec("b", StatusPass, "", "D-E1")}, StatusPass, StatusPass},
	{"D-E2", []TestResult{spec("a", StatusPass, "", "D-E2"), spec("b", StatusSkip, "needs a GPU", "D-E2")}, StatusPartial, StatusPartial},
	{"D-E3", []TestResult{spec("a", StatusPass, "", "D-E3"), spec("b", StatusFail, "boom", "D-E3"), spec("c", StatusSkip, "x", "D-E3")}, StatusFail, StatusFail},
	{"D-E4", []TestResult{spec("a", StatusSkip, "filtered", "D-E4")}, StatusSkip, StatusSkip},
	// A Disruptive spec left out while the unit test named after it passed:
	// PASS outranked SKIP before.
	{"D-P1", []TestResult{spec("gate", StatusSkip, "Disruptive", "D-P1"), unitTest("TestGate/D-P1", StatusPass, "", "D-P1")}, StatusPartial, StatusReferenceOnly},
	{"D-U1", []TestResult{unitTest("TestB/D-U1", StatusPass, "", "D-U1")}, StatusPass, StatusReferenceOnly},
	{"D-U2", []TestResult{unitTest("TestB/D-U2", StatusPass, "", "D-U2"), unitTest("TestB/D-U2_b", StatusFail, "bad", "D-U2")}, StatusFail, StatusMissing},
	{"D-U3", []TestResult{spec("twin", StatusPass, "", "D-U3"), unitTest("TestB/D-U3", StatusFail, "bad", "D-U3")}, StatusFail, StatusPass},
	{"D-U4", []TestResult{unitTest("TestB/D-U4", StatusSkip, "later", "D-U4")}, StatusSkip, StatusMissing},
	{"D-U5", nil, StatusMissing, StatusMissing},
	{"S-E1", []TestResult{spec("a", StatusFail, "boom", "S-E1"), unitTest("TestB/S-E1", StatusPass, "", "S-E1")}, StatusFail, StatusFail},
}

func TestAggregateHarnessAndVendor(t *testing.T) {
	var ids []string
	var all []TestResult
	for _, c := range aggregateCases {
		ids = append(ids, c.id)
		all = append(all, c.tests...)
	}
	plan := smallPlan(ids...)
	for _, mode := range []Mode{ModeHarness, ModeVendor} {
		got := statuses(Aggregate(plan, all, Options{Mode: mode}))
		for _, c := range aggregateCases {
			want := c.harness
			if mode == ModeVendor {
				want = c.vendor
			}
			if got[c.id] != want {
				t.Errorf("%s mode, %s: %s, want %s", mode, c.id, got[c.id], want)
			}
		}
	}
}

func TestAggregateKeepsTheKindsApartAndFailuresFirst(t *testing.T) {
	rep := Aggregate(smallPlan("D-P1", "D-E3"), []TestResult{
		unitTest("TestGate/D-P1", StatusPass, "", "D-P1"),
		spec("gate", StatusSkip, "Disruptive", "D-P1"),
		spec("ok", StatusPass, "", "D-E3"), spec("bad", StatusFail, "boom", "D-E3"), spec("skipped", StatusSkip, "later", "D-E3"),
	}, Options{Mode: ModeHarness})
	p1, _ := rep.Get("D-P1")
	if len(p1.Cluster) != 1 || p1.Cluster[0].Name != "gate" || len(p1.Reference) != 1 || p1.Reference[0].Name != "TestGate/D-P1" {
		t.Errorf("D-P1 cluster %+v reference %+v", p1.Cluster, p1.Reference)
	}
	if got := p1.Reasons(); !reflect.DeepEqual(got, []string{"Disruptive"}) {
		t.Errorf("D-P1 reasons %q, want the skip reason", got)
	}
	e3, _ := rep.Get("D-E3")
	var order []string
	for _, t := range e3.Tests() {
		order = append(order, t.Name)
	}
	if !reflect.DeepEqual(order, []string{"bad", "skipped", "ok"}) {
		t.Errorf("D-E3 evidence order %v, want failures, skips, passes", order)
	}
	if got := e3.Reasons(); !reflect.DeepEqual(got, []string{"boom"}) {
		t.Errorf("D-E3 reasons %q", got)
	}
}

func TestSummaryCountsEveryStatusOnItsOwn(t *testing.T) {
	var ids []string
	var all []TestResult
	for _, c := range aggregateCases {
		ids = append(ids, c.id)
		all = append(all, c.tests...)
	}
	rep := Aggregate(smallPlan(ids...), all, Options{Mode: ModeVendor})
	want := "PASS 2, PARTIAL 1, REFERENCE-ONLY 2, SKIP 1, NOT-IMPLEMENTED 0, FAIL 2, MISSING 3 of 11"
	if got := rep.SummaryLine(); got != want {
		t.Errorf("SummaryLine() = %q, want %q", got, want)
	}
	sum := 0
	for _, n := range rep.Counts() {
		sum += n
	}
	if sum != len(rep.Results) || len(rep.Counts()) != len(Statuses) {
		t.Errorf("Counts() = %v", rep.Counts())
	}
}

func TestUnitItemsAreSkippedWithAReasonWhenUnitTestsWereNotRead(t *testing.T) {
	plan := smallPlan("D-U1", "D-U2", "D-E1")
	why := "no go test -json input was given"
	rep := Aggregate(plan, []TestResult{spec("twin", StatusPass, "", "D-U2")}, Options{Mode: ModeVendor, ReferenceNotRead: why})
	u1, _ := rep.Get("D-U1")
	if u1.Status != StatusSkip || !strings.Contains(u1.Reason, why) || !strings.Contains(strings.Join(u1.Reasons(), " "), why) {
		t.Errorf("D-U1 = %s %q, want SKIP saying %q", u1.Status, u1.Reason, why)
	}
	if got := statuses(rep); got["D-U2"] != StatusPass || got["D-E1"] != StatusMissing {
		t.Errorf("statuses %v: D-U2 is proved by its e2e twin, D-E1 (not unit-level) stays MISSING", got)
	}
}

func TestAggregateUnknownIDsAndSuiteFailures(t *testing.T) {
	rep := Aggregate(smallPlan("D-E1"), []TestResult{
		spec("typo", StatusPass, "", "D-E11", "D-E1"), spec("typo2", StatusFail, "", "D-E11"),
		{Source: SourceGoTest, Suite: "p", Name: "package", Status: StatusFail, SuiteLevel: true},
	}, Options{})
	if rep.Mode != ModeVendor {
		t.Errorf("default mode %q, want the strict vendor mode", rep.Mode)
	}
	if len(rep.Unknown) != 1 || rep.Unknown[0].ID != "D-E11" || len(rep.Unknown[0].Tests) != 2 {
		t.Errorf("Unknown = %+v", rep.Unknown)
	}
	if len(rep.SuiteFailures) != 1 {
		t.Errorf("SuiteFailures = %+v", rep.SuiteFailures)
	}
}

func TestModeOf(t *testing.T) {
	for env, want := range map[*Environment]Mode{
		nil:                         ModeVendor,
		{Cluster: "existing"}:       ModeVendor,
		{Cluster: "local"}:          ModeHarness,
		{Cluster: "something else"}: ModeVendor,
	} {
		if got := ModeOf(env); got != want {
			t.Errorf("ModeOf(%+v) = %s, want %s", env, got, want)
		}
	}
}

func TestReadInputsMissing(t *testing.T) {
	dir := t.TempDir()
	plan := loadPlan(t)
	results, inputs, err := ReadInputs(filepath.Join(dir, "junit_e2e.xml"), UnitJSON{Path: filepath.Join(dir, "unit.json"), Explicit: true})
	if err != nil {
		t.Fatalf("ReadInputs with missing files: %v", err)
	}
	if len(results) != 0 || len(inputs) != 2 || inputs[0].State != InputNotFound || inputs[1].State != InputNotFound {
		t.Fatalf("results %v inputs %+v", results, inputs)
	}
	rep := Aggregate(plan, results, Options{})
	rep.Inputs = inputs
	if got := rep.Counts(); got[StatusMissing] != len(plan.Items) {
		t.Errorf("Counts() = %v, want all %d MISSING", got, len(plan.Items))
	}
	md := markdown(t, rep)
	for _, s := range []string{
		"Ginkgo JUnit (against the cluster under test): " + filepath.Join(dir, "junit_e2e.xml") + ": file not found",
		"go test -json (reference implementation only): " + filepath.Join(dir, "unit.json") + ": file not found",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q", s)
		}
	}

	// One present, one missing; a malformed file is an error naming it.
	junit := writeFile(t, "junit.xml", junitFixture)
	results, inputs, err = ReadInputs(junit, UnitJSON{Path: filepath.Join(dir, "unit.json"), Explicit: true})
	if err != nil || len(results) != 9 || !inputs[0].Used() || inputs[0].Tests != 9 || inputs[1].Used() {
		t.Errorf("ReadInputs(junit, missing) = %d results, %+v, %v", len(results), inputs, err)
	}
	bad := writeFile(t, "unit.json", "not json\n")
	if _, _, err := ReadInputs(junit, UnitJSON{Path: bad, Explicit: true}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("malformed go test -json: err = %v, want error naming %s", err, bad)
	}
	// An empty path means "not given".
	_, inputs, err = ReadInputs("", UnitJSON{})
	if err != nil || inputs[0].State != InputNotGiven || inputs[1].State != InputNotGiven {
		t.Errorf("ReadInputs(\"\", \"\") = %+v, %v", inputs, err)
	}
}

func TestParseStatus(t *testing.T) {
	for in, want := range map[string]Status{"FAIL": StatusFail, "fail": StatusFail, " Missing ": StatusMissing, "skip": StatusSkip,
		"PASS": StatusPass, "partial": StatusPartial, "reference-only": StatusReferenceOnly} {
		if got, err := ParseStatus(in); err != nil || got != want {
			t.Errorf("ParseStatus(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseStatus("FAILED"); err == nil || !strings.Contains(err.Error(), "REFERENCE-ONLY") {
		t.Errorf("ParseStatus(FAILED) = %v, want an error listing the statuses", err)
	}
}

func markdown(t *testing.T, rep *Report) string {
	t.Helper()
	var b strings.Builder
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
