package testplan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// junitFixture is trimmed output of Ginkgo v2.32.0 --ginkgo.junit-report for
// a suite run with RunSpecs(t, "A Suite", Label("suite-label",
// "Feature:GenericWorkload")): passed, failed, Skip("needs a kubelet"), PIt,
// an id only in the spec text, a panic, a timeout and a semver constraint.
const junitFixture = `<?xml version="1.0" encoding="UTF-8"?>
  <testsuites tests="9" disabled="2" errors="1" failures="2" time="0.0015">
      <testsuite name="A Suite" package="/tmp/gk/a" tests="9" disabled="1" skipped="1" errors="1" failures="2" time="0.0015" timestamp="2026-11-30T06:11:03">
          <properties>
              <property name="SuiteSucceeded" value="false"></property>
              <property name="SuiteHasProgrammaticFocus" value="false"></property>
              <property name="SpecialSuiteFailureReason" value=""></property>
              <property name="SuiteLabels" value="[suite-label,Feature:GenericWorkload]"></property>
              <property name="SuiteSemVerConstraints" value="[]"></property>
              <property name="SuiteComponentSemVerConstraints" value="[]"></property>
              <property name="RandomSeed" value="1796019063"></property>
              <property name="LabelFilter" value=""></property>
          </properties>
          <testcase name="[BeforeSuite]" classname="A Suite" status="passed" time="9.5892e-05">
              <system-err>&gt; Enter [BeforeSuite] TOP-LEVEL - /tmp/gk/a/a_test.go:15</system-err>
          </testcase>
          <testcase name="[It] Deployment D-I2 creation ordering [kep-6276, D-I2, Serial]" classname="A Suite" status="passed" time="1.1217e-05">
          </testcase>
          <testcase name="[It] Deployment fails [kep-6276, D-I3]" classname="A Suite" status="failed" time="0.000240507">
              <failure message="Expected&#xA;    &lt;int&gt;: 1&#xA;to equal&#xA;    &lt;int&gt;: 2" type="failed">[FAILED] Expected&#xA;    &lt;int&gt;: 1&#xA;to equal&#xA;    &lt;int&gt;: 2&#xA;In [It] at: /tmp/gk/a/a_test.go:19 @ 11/30/26 06:11:03.879&#xA;</failure>
              <system-err>&gt; Enter [It] fails - /tmp/gk/a/a_test.go:19 @ 11/30/26 06:11:03.878&#xA;</system-err>
          </testcase>
          <testcase name="[It] Deployment skips [kep-6276, D-E1]" classname="A Suite" status="skipped" time="0.000139898">
              <skipped message="skipped - needs a kubelet"></skipped>
          </testcase>
          <testcase name="[It] Deployment pending one [kep-6276, D-E2]" classname="A Suite" status="pending" time="0">
              <skipped message="pending"></skipped>
          </testcase>
          <testcase name="[It] Deployment [D-E3] in text [kep-6276]" classname="A Suite" status="passed" time="3.2148e-05">
          </testcase>
          <testcase name="[It] Deployment panics [kep-6276, D-E4]" classname="A Suite" status="panicked" time="7.7905e-05">
              <error message="boom" type="panicked">[PANICKED] Test Panicked&#xA;In [It] at: /tmp/gk/a/a_test.go:23&#xA;&#xA;boom&#xA;</error>
          </testcase>
          <testcase name="[It] Deployment times out [kep-6276, D-E5] [&gt;= 1.36.0]" classname="A Suite" status="timedout" time="1">
              <failure message="A spec timeout occurred" type="timedout">[TIMEDOUT] A spec timeout occurred</failure>
          </testcase>
          <testcase name="[It] StatefulSet | piped [S-E1]" classname="A Suite" status="passed" time="0.1">
          </testcase>
          <testcase name="[It] StatefulSet typo [S-E99]" classname="A Suite" status="passed" time="0.1">
          </testcase>
      </testsuite>
  </testsuites>
`

// junitBeforeSuiteFailed: a second suite whose SynchronizedBeforeSuite
// failed. Ginkgo then reports no specs at all; this fixture additionally has
// a spec Ginkgo skipped without a reason, one the user skipped with a reason,
// and an id in the suite labels.
const junitBeforeSuiteFailed = `<?xml version="1.0" encoding="UTF-8"?>
  <testsuites tests="4" disabled="2" errors="0" failures="1" time="0.0002">
      <testsuite name="B Suite" package="/tmp/gk/b" tests="4" disabled="0" skipped="2" errors="0" failures="1" time="0.0002" timestamp="2026-11-30T06:11:06">
          <properties>
              <property name="SuiteSucceeded" value="false"></property>
              <property name="SuiteLabels" value="[S-P6]"></property>
          </properties>
          <testcase name="[SynchronizedBeforeSuite]" classname="B Suite" status="failed" time="0.00021529">
              <failure message="cluster not reachable&#xA;Expected&#xA;    &lt;bool&gt;: true&#xA;to be false" type="failed">[FAILED] cluster not reachable</failure>
          </testcase>
          <testcase name="[It] StatefulSet gang [S-I2]" classname="B Suite" status="skipped" time="0">
              <skipped message="skipped"></skipped>
          </testcase>
          <testcase name="[It] StatefulSet user skip [S-I3]" classname="B Suite" status="skipped" time="0">
              <skipped message="skipped - no GPU nodes"></skipped>
          </testcase>
          <testcase name="[AfterSuite]" classname="B Suite" status="passed" time="0">
          </testcase>
      </testsuite>
  </testsuites>
`

// goTestFixture is `go test -json` output (Go 1.26) for:
//
//	func TestBuild(t *testing.T) {
//		t.Run("D-U1_compiles_constraints", func(t *testing.T) {})
//		t.Run("D-U2 skip", func(t *testing.T) { t.Log("some log"); t.Skip("needs a kubelet") })
//		t.Run("D-U3_fail", func(t *testing.T) { t.Error("bad") })
//	}
//	func TestSkipTop(t *testing.T) { t.Skipf("S-U1 not yet: %s", "reason") }
//
// plus a multi-line skip, a test that never finished, a repeated run
// (-count=2) and a package that failed to build.
const goTestFixture = `{"Time":"2026-11-30T06:11:06.604374963Z","Action":"start","Package":"example.com/gk/u"}
{"Time":"2026-11-30T06:11:06.60796456Z","Action":"run","Package":"example.com/gk/u","Test":"TestBuild"}
{"Time":"2026-11-30T06:11:06.607985331Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild","Output":"=== RUN   TestBuild\n"}
{"Time":"2026-11-30T06:11:06.608050147Z","Action":"run","Package":"example.com/gk/u","Test":"TestBuild/D-U1_compiles_constraints"}
{"Time":"2026-11-30T06:11:06.608052961Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U1_compiles_constraints","Output":"=== RUN   TestBuild/D-U1_compiles_constraints\n"}
{"Time":"2026-11-30T06:11:06.608061203Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U1_compiles_constraints","Output":"--- PASS: TestBuild/D-U1_compiles_constraints (0.00s)\n"}
{"Time":"2026-11-30T06:11:06.608064729Z","Action":"pass","Package":"example.com/gk/u","Test":"TestBuild/D-U1_compiles_constraints","Elapsed":0}
{"Time":"2026-11-30T06:11:06.608069316Z","Action":"run","Package":"example.com/gk/u","Test":"TestBuild/D-U2_skip"}
{"Time":"2026-11-30T06:11:06.608071609Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U2_skip","Output":"=== RUN   TestBuild/D-U2_skip\n"}
{"Time":"2026-11-30T06:11:06.608075765Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U2_skip","Output":"    u_test.go:7: some log\n"}
{"Time":"2026-11-30T06:11:06.608078149Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U2_skip","Output":"    u_test.go:7: needs a kubelet\n"}
{"Time":"2026-11-30T06:11:06.608081353Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U2_skip","Output":"--- SKIP: TestBuild/D-U2_skip (0.00s)\n"}
{"Time":"2026-11-30T06:11:06.608083837Z","Action":"skip","Package":"example.com/gk/u","Test":"TestBuild/D-U2_skip","Elapsed":0}
{"Time":"2026-11-30T06:11:06.60808607Z","Action":"run","Package":"example.com/gk/u","Test":"TestBuild/D-U3_fail"}
{"Time":"2026-11-30T06:11:06.608087993Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U3_fail","Output":"=== RUN   TestBuild/D-U3_fail\n"}
{"Time":"2026-11-30T06:11:06.608090136Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U3_fail","Output":"    u_test.go:8: bad\n"}
{"Time":"2026-11-30T06:11:06.60809246Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U3_fail","Output":"--- FAIL: TestBuild/D-U3_fail (0.00s)\n"}
{"Time":"2026-11-30T06:11:06.608094763Z","Action":"fail","Package":"example.com/gk/u","Test":"TestBuild/D-U3_fail","Elapsed":0}
{"Time":"2026-11-30T06:11:06.608097187Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild","Output":"--- FAIL: TestBuild (0.00s)\n"}
{"Time":"2026-11-30T06:11:06.60809949Z","Action":"fail","Package":"example.com/gk/u","Test":"TestBuild","Elapsed":0}
{"Time":"2026-11-30T06:11:06.608101814Z","Action":"run","Package":"example.com/gk/u","Test":"TestSkipTop"}
{"Time":"2026-11-30T06:11:06.608103917Z","Action":"output","Package":"example.com/gk/u","Test":"TestSkipTop","Output":"=== RUN   TestSkipTop\n"}
{"Time":"2026-11-30T06:11:06.608106781Z","Action":"output","Package":"example.com/gk/u","Test":"TestSkipTop","Output":"    u_test.go:10: S-U1 not yet: reason\n"}
{"Time":"2026-11-30T06:11:06.608109265Z","Action":"output","Package":"example.com/gk/u","Test":"TestSkipTop","Output":"--- SKIP: TestSkipTop (0.00s)\n"}
{"Time":"2026-11-30T06:11:06.608111779Z","Action":"skip","Package":"example.com/gk/u","Test":"TestSkipTop","Elapsed":0}
{"Action":"run","Package":"example.com/gk/u","Test":"TestMulti/S-U14_two_workloads"}
{"Action":"output","Package":"example.com/gk/u","Test":"TestMulti/S-U14_two_workloads","Output":"=== RUN   TestMulti/S-U14_two_workloads\n"}
{"Action":"output","Package":"example.com/gk/u","Test":"TestMulti/S-U14_two_workloads","Output":"    multi_test.go:20: requires the\n"}
{"Action":"output","Package":"example.com/gk/u","Test":"TestMulti/S-U14_two_workloads","Output":"        events recorder\n"}
{"Action":"output","Package":"example.com/gk/u","Test":"TestMulti/S-U14_two_workloads","Output":"--- SKIP: TestMulti/S-U14_two_workloads (0.00s)\n"}
{"Action":"skip","Package":"example.com/gk/u","Test":"TestMulti/S-U14_two_workloads","Elapsed":0}
{"Action":"run","Package":"example.com/gk/u","Test":"TestMulti/S-U15_silent_skip"}
{"Action":"skip","Package":"example.com/gk/u","Test":"TestMulti/S-U15_silent_skip","Elapsed":0}
{"Action":"run","Package":"example.com/gk/u","Test":"TestRepeat/S-U16"}
{"Action":"pass","Package":"example.com/gk/u","Test":"TestRepeat/S-U16","Elapsed":0}
{"Action":"run","Package":"example.com/gk/u","Test":"TestRepeat/S-U16"}
{"Action":"output","Package":"example.com/gk/u","Test":"TestRepeat/S-U16","Output":"    repeat_test.go:5: flaked\n"}
{"Action":"fail","Package":"example.com/gk/u","Test":"TestRepeat/S-U16","Elapsed":0}
{"Action":"run","Package":"example.com/gk/u","Test":"TestHang/S-U17_hangs"}
{"Action":"output","Package":"example.com/gk/u","Output":"panic: test timed out after 10m0s\n"}
{"Time":"2026-11-30T06:11:06.608113932Z","Action":"output","Package":"example.com/gk/u","Output":"FAIL\n"}
{"Time":"2026-11-30T06:11:06.608173059Z","Action":"output","Package":"example.com/gk/u","Output":"FAIL\texample.com/gk/u\t0.003s\n"}
{"Time":"2026-11-30T06:11:06.608181151Z","Action":"fail","Package":"example.com/gk/u","Elapsed":0.004}

{"ImportPath":"example.com/gk/bf [example.com/gk/bf.test]","Action":"build-output","Output":"# example.com/gk/bf [example.com/gk/bf.test]\n"}
{"ImportPath":"example.com/gk/bf [example.com/gk/bf.test]","Action":"build-output","Output":"bf/bf_test.go:5:28: undefined: undefined\n"}
{"ImportPath":"example.com/gk/bf [example.com/gk/bf.test]","Action":"build-fail"}
{"Time":"2026-11-30T06:13:17.900512331Z","Action":"start","Package":"example.com/gk/bf"}
{"Time":"2026-11-30T06:13:17.900631739Z","Action":"output","Package":"example.com/gk/bf","Output":"FAIL\texample.com/gk/bf [build failed]\n"}
{"Time":"2026-11-30T06:13:17.900645048Z","Action":"fail","Package":"example.com/gk/bf","Elapsed":0,"FailedBuild":"example.com/gk/bf [example.com/gk/bf.test]"}
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func byName(results []TestResult) map[string]TestResult {
	m := map[string]TestResult{}
	for _, r := range results {
		m[r.Name] = r
	}
	return m
}

func loadPlan(t *testing.T) *Plan {
	t.Helper()
	p, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadJUnit(t *testing.T) {
	res, err := ReadJUnit(writeFile(t, "junit.xml", junitFixture))
	if err != nil {
		t.Fatalf("ReadJUnit: %v", err)
	}
	if len(res) != 9 {
		for _, r := range res {
			t.Logf("%+v", r)
		}
		t.Fatalf("got %d results, want 9 (the passed [BeforeSuite] is dropped)", len(res))
	}
	m := byName(res)
	for _, tc := range []struct {
		name   string
		status Status
		reason string
		ids    []string
		labels []string
	}{
		{"Deployment D-I2 creation ordering", StatusPass, "", []string{"D-I2"}, []string{"kep-6276", "D-I2", "Serial", "suite-label", "Feature:GenericWorkload"}},
		{"Deployment fails", StatusFail, "Expected <int>: 1 to equal <int>: 2", []string{"D-I3"}, nil},
		{"Deployment skips", StatusSkip, "needs a kubelet", []string{"D-E1"}, nil},
		{"Deployment pending one", StatusSkip, "pending", []string{"D-E2"}, nil},
		{"Deployment [D-E3] in text", StatusPass, "", []string{"D-E3"}, []string{"kep-6276", "suite-label", "Feature:GenericWorkload"}},
		{"Deployment panics", StatusFail, "boom", []string{"D-E4"}, nil},
		{"Deployment times out", StatusFail, "A spec timeout occurred", []string{"D-E5"}, []string{"kep-6276", "D-E5", "suite-label", "Feature:GenericWorkload"}},
		{"StatefulSet | piped", StatusPass, "", []string{"S-E1"}, nil},
	} {
		r, ok := m[tc.name]
		if !ok {
			t.Errorf("no result named %q; have %v", tc.name, keys(m))
			continue
		}
		if r.Status != tc.status || r.Reason != tc.reason || !reflect.DeepEqual(r.IDs, tc.ids) {
			t.Errorf("%q: got status %s reason %q ids %v; want %s %q %v", tc.name, r.Status, r.Reason, r.IDs, tc.status, tc.reason, tc.ids)
		}
		if tc.labels != nil && !reflect.DeepEqual(r.Labels, tc.labels) {
			t.Errorf("%q: labels %q, want %q", tc.name, r.Labels, tc.labels)
		}
		if r.Source != SourceJUnit || r.Suite != "A Suite" || r.SuiteLevel {
			t.Errorf("%q: source %q suite %q suiteLevel %v", tc.name, r.Source, r.Suite, r.SuiteLevel)
		}
	}
}

func keys(m map[string]TestResult) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestReadJUnitSuiteLevelFailure(t *testing.T) {
	res, err := ReadJUnit(writeFile(t, "junit.xml", junitBeforeSuiteFailed))
	if err != nil {
		t.Fatalf("ReadJUnit: %v", err)
	}
	var suiteLevel []TestResult
	for _, r := range res {
		if r.SuiteLevel {
			suiteLevel = append(suiteLevel, r)
		}
	}
	if len(suiteLevel) != 1 {
		t.Fatalf("got %d suite-level results, want 1 (failed [SynchronizedBeforeSuite] only): %+v", len(suiteLevel), suiteLevel)
	}
	sl := suiteLevel[0]
	if sl.Name != "[SynchronizedBeforeSuite]" || sl.Status != StatusFail || !strings.HasPrefix(sl.Reason, "cluster not reachable") {
		t.Errorf("suite-level result = %+v", sl)
	}
	// S-I2 was skipped by Ginkgo without a reason and S-P6 is a suite label:
	// neither got a result of its own. S-I3 was skipped with a reason.
	if want := []string{"S-I2", "S-P6"}; !reflect.DeepEqual(sl.IDs, want) {
		t.Errorf("suite-level ids = %v, want %v", sl.IDs, want)
	}

	// Even if another input passes those ids, they must not be PASS.
	unit := []TestResult{
		{Source: SourceGoTest, Name: "TestX/S-I2", Status: StatusPass, IDs: []string{"S-I2"}},
		{Source: SourceGoTest, Name: "TestX/S-P6", Status: StatusPass, IDs: []string{"S-P6"}},
		{Source: SourceGoTest, Name: "TestX/S-I3", Status: StatusPass, IDs: []string{"S-I3"}},
	}
	rep := Aggregate(loadPlan(t), append(res, unit...))
	for id, want := range map[string]Status{"S-I2": StatusFail, "S-P6": StatusFail, "S-I3": StatusPass} {
		if got, _ := rep.Get(id); got.Status != want {
			t.Errorf("%s: %s, want %s", id, got.Status, want)
		}
	}
	if len(rep.SuiteFailures) != 1 {
		t.Errorf("report has %d suite failures, want 1", len(rep.SuiteFailures))
	}
	var b strings.Builder
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, s := range []string{"## Suite-level failures", "[SynchronizedBeforeSuite] (B Suite): cluster not reachable", "FAIL for S-I2, S-P6"} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q", s)
		}
	}
}

func TestReadJUnitVariants(t *testing.T) {
	// A bare <testsuite> root, generic JUnit elements without Ginkgo's status
	// attribute, and Ginkgo's OmitLeafNodeType naming.
	doc := `<testsuite name="plain">
  <testcase name="D-V1 rejects [D-V1]"/>
  <testcase name="D-V2 broken"><error message="" type="interrupted">interrupted by user</error></testcase>
  <testcase name="D-V3"><skipped/></testcase>
  <testcase name="[Serial] D-P1 looks like a node type"/>
  <testcase name=""><failure message="AfterSuite went wrong"/></testcase>
</testsuite>`
	res, err := ReadJUnit(writeFile(t, "plain.xml", doc))
	if err != nil {
		t.Fatalf("ReadJUnit: %v", err)
	}
	m := byName(res)
	check := func(name string, st Status, reason string) {
		t.Helper()
		r, ok := m[name]
		if !ok {
			t.Errorf("no result %q in %v", name, keys(m))
			return
		}
		if r.Status != st || r.Reason != reason {
			t.Errorf("%q: %s %q, want %s %q", name, r.Status, r.Reason, st, reason)
		}
	}
	check("D-V1 rejects", StatusPass, "")
	check("D-V2 broken", StatusFail, "interrupted by user")
	check("D-V3", StatusSkip, "skipped")
	check("[Serial] D-P1 looks like a node type", StatusPass, "")
	check("[suite node]", StatusFail, "AfterSuite went wrong")
	if !m["[suite node]"].SuiteLevel || !reflect.DeepEqual(m["[suite node]"].IDs, []string{"D-V3"}) {
		t.Errorf("suite node result = %+v, want SuiteLevel with ids [D-V3]", m["[suite node]"])
	}
}

func TestReadJUnitErrors(t *testing.T) {
	_, err := ReadJUnit(filepath.Join(t.TempDir(), "absent.xml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist", err)
	}
	for name, doc := range map[string]string{
		"truncated":  junitFixture[:len(junitFixture)/2],
		"wrong root": `<html><body/></html>`,
		"empty":      ``,
		"not xml":    `{"Action":"pass"}`,
	} {
		p := writeFile(t, "bad.xml", doc)
		_, err := ReadJUnit(p)
		if err == nil {
			t.Errorf("%s: ReadJUnit succeeded, want error", name)
			continue
		}
		if errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "malformed JUnit") {
			t.Errorf("%s: error %q should name %s and say malformed", name, err, p)
		}
	}
}

func TestSplitSpecLabels(t *testing.T) {
	for _, tc := range []struct {
		in, text string
		labels   []string
	}{
		{"Deployment gang [D-I2, Serial, Feature:GenericWorkload]", "Deployment gang", []string{"D-I2", "Serial", "Feature:GenericWorkload"}},
		{"no labels at all", "no labels at all", nil},
		{"Deployment [D-E3] in text [kep-6276]", "Deployment [D-E3] in text", []string{"kep-6276"}},
		{"with semver [D-E5] [>= 1.36.0, < 2.0]", "with semver", []string{"D-E5"}},
		{"with component [D-E6] [>= 1.0] [kube: [>= 1.36]]", "with component", []string{"D-E6"}},
		{"text ends [foo] [a, b]", "text ends [foo]", []string{"a", "b"}},
		{"glued[D-E7]", "glued[D-E7]", nil},
		{"version only [1.36]", "version only", nil},
	} {
		text, labels := splitSpecLabels(tc.in)
		if text != tc.text || !reflect.DeepEqual(labels, tc.labels) {
			t.Errorf("splitSpecLabels(%q) = %q, %q; want %q, %q", tc.in, text, labels, tc.text, tc.labels)
		}
	}
}

func TestReadGoTestJSON(t *testing.T) {
	res, err := ReadGoTestJSON(writeFile(t, "unit.json", goTestFixture))
	if err != nil {
		t.Fatalf("ReadGoTestJSON: %v", err)
	}
	type want struct {
		status Status
		reason string
		ids    []string
	}
	got := map[string][]want{}
	for _, r := range res {
		got[r.Name] = append(got[r.Name], want{r.Status, r.Reason, r.IDs})
	}
	for name, w := range map[string][]want{
		"TestBuild/D-U1_compiles_constraints": {{StatusPass, "", []string{"D-U1"}}},
		"TestBuild/D-U2_skip":                 {{StatusSkip, "u_test.go:7: needs a kubelet", []string{"D-U2"}}},
		"TestBuild/D-U3_fail":                 {{StatusFail, "u_test.go:8: bad", []string{"D-U3"}}},
		// The parent names no id: its FAIL counts for nothing.
		"TestBuild": {{StatusFail, "", nil}},
		// An id in the skip message is not an id in the test name.
		"TestSkipTop":                   {{StatusSkip, "u_test.go:10: S-U1 not yet: reason", nil}},
		"TestMulti/S-U14_two_workloads": {{StatusSkip, "multi_test.go:20: requires the events recorder", []string{"S-U14"}}},
		"TestMulti/S-U15_silent_skip":   {{StatusSkip, "(no reason given)", []string{"S-U15"}}},
		"TestRepeat/S-U16":              {{StatusPass, "", []string{"S-U16"}}, {StatusFail, "repeat_test.go:5: flaked", []string{"S-U16"}}},
		"TestHang/S-U17_hangs":          {{StatusFail, "started but no result recorded (package failed: panic: test timed out after 10m0s)", []string{"S-U17"}}},
		"package":                       {{StatusFail, "build failed: bf/bf_test.go:5:28: undefined: undefined", nil}},
	} {
		if !reflect.DeepEqual(got[name], w) {
			t.Errorf("%s: got %+v, want %+v", name, got[name], w)
		}
	}
	if len(res) != 11 {
		t.Errorf("got %d results, want 11: %+v", len(res), res)
	}
	for _, r := range res {
		if r.SuiteLevel != (r.Name == "package") {
			t.Errorf("%s: SuiteLevel = %v", r.Name, r.SuiteLevel)
		}
		if r.Name == "package" && r.Suite != "example.com/gk/bf" {
			t.Errorf("build failure attributed to %q, want example.com/gk/bf", r.Suite)
		}
	}

	rep := Aggregate(loadPlan(t), res)
	for id, st := range map[string]Status{"D-U1": StatusPass, "D-U2": StatusSkip, "D-U3": StatusFail, "S-U1": StatusMissing, "S-U14": StatusSkip, "S-U16": StatusFail, "S-U17": StatusFail} {
		if r, _ := rep.Get(id); r.Status != st {
			t.Errorf("%s: %s, want %s", id, r.Status, st)
		}
	}
}

func TestReadGoTestJSONErrors(t *testing.T) {
	_, err := ReadGoTestJSON(filepath.Join(t.TempDir(), "absent.json"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist", err)
	}
	for name, doc := range map[string]string{
		"plain text":   "{\"Action\":\"run\",\"Test\":\"TestA\"}\nok  \texample.com/x\t0.1s\n",
		"broken json":  "{\"Action\":\"run\",\"Test\":\"TestA\"}\n{\"Action\":\"pass\",\n",
		"wrong type":   "{\"Action\":\"pass\",\"Test\":17}\n",
		"no action":    "{\"Test\":\"TestA\"}\n",
		"junit passed": junitFixture,
	} {
		p := writeFile(t, "bad.json", doc)
		_, err := ReadGoTestJSON(p)
		if err == nil {
			t.Errorf("%s: ReadGoTestJSON succeeded, want error", name)
			continue
		}
		if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%s: error %q should name %s and the line", name, err, p)
		}
	}
	// An empty stream is not malformed: it contributes nothing.
	res, err := ReadGoTestJSON(writeFile(t, "empty.json", "\n"))
	if err != nil || len(res) != 0 {
		t.Errorf("empty stream: %v, %v", res, err)
	}
}

func TestAggregatePrecedence(t *testing.T) {
	plan := &Plan{Items: []Item{
		{ID: "D-U1", KEP: "kep-6276", Level: "unit", Text: "a"},
		{ID: "D-U2", KEP: "kep-6276", Level: "unit", Text: "b"},
		{ID: "D-U3", KEP: "kep-6276", Level: "unit", Text: "c"},
		{ID: "D-U4", KEP: "kep-6276", Level: "unit", Text: "d"},
		{ID: "S-U1", KEP: "kep-6277", Level: "unit", Text: "e"},
		{ID: "S-U2", KEP: "kep-6277", Level: "unit", Text: "f"},
	}}
	tr := func(name string, st Status, reason string, ids ...string) TestResult {
		return TestResult{Source: SourceGoTest, Name: name, Status: st, Reason: reason, IDs: ids}
	}
	results := []TestResult{
		tr("skip1", StatusSkip, "no kubelet", "D-U1"),
		tr("pass1", StatusPass, "", "D-U1", "D-U2"),
		tr("fail1", StatusFail, "boom", "D-U1"),
		tr("skip2", StatusSkip, "no gpu", "D-U2", "D-U3"),
		tr("skip3", StatusSkip, "no kubelet", "D-U3"),
		tr("typo", StatusPass, "", "D-U11", "S-U1"),
		tr("typo2", StatusFail, "", "D-U11"),
		tr("ignored", StatusMissing, "", "S-U2"),
	}
	rep := Aggregate(plan, results)
	want := map[string]Status{"D-U1": StatusFail, "D-U2": StatusPass, "D-U3": StatusSkip, "D-U4": StatusMissing, "S-U1": StatusPass, "S-U2": StatusMissing}
	for _, r := range rep.Results {
		if r.Status != want[r.Item.ID] {
			t.Errorf("%s: %s, want %s", r.Item.ID, r.Status, want[r.Item.ID])
		}
	}
	if len(rep.Results) != len(plan.Items) || rep.Results[0].Item.ID != "D-U1" || rep.Results[5].Item.ID != "S-U2" {
		t.Errorf("results not in plan order")
	}
	if d1, _ := rep.Get("D-U1"); d1.Tests[0].Name != "fail1" || len(d1.Decisive()) != 1 || len(d1.Tests) != 3 {
		t.Errorf("D-U1 evidence = %+v", d1.Tests)
	}
	if got := rep.Counts(); !reflect.DeepEqual(got, map[Status]int{StatusPass: 2, StatusFail: 1, StatusSkip: 1, StatusMissing: 2}) {
		t.Errorf("Counts() = %v", got)
	}
	if got := rep.SummaryLine(); got != "PASS 2, FAIL 1, SKIP 1, MISSING 2 of 6" {
		t.Errorf("SummaryLine() = %q", got)
	}
	if len(rep.Unknown) != 1 || rep.Unknown[0].ID != "D-U11" || len(rep.Unknown[0].Tests) != 2 {
		t.Errorf("Unknown = %+v, want D-U11 named by 2 tests", rep.Unknown)
	}

	var b strings.Builder
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, s := range []string{
		"| D-U3 | unit | SKIP | skip2; skip3<br>reason: no gpu; no kubelet | c |",
		"| D-U1 | unit | FAIL | fail1; pass1 (PASS); skip1 (SKIP)<br>failure: boom | a |",
		"| D-U4 | unit | MISSING | none | d |",
		"| D-U11 | typo (PASS); typo2 (FAIL) |",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
}

func TestReadInputsMissing(t *testing.T) {
	dir := t.TempDir()
	results, inputs, err := ReadInputs(filepath.Join(dir, "junit_e2e.xml"), filepath.Join(dir, "unit.json"))
	if err != nil {
		t.Fatalf("ReadInputs with missing files: %v", err)
	}
	if len(results) != 0 || len(inputs) != 2 || inputs[0].Found || inputs[1].Found {
		t.Fatalf("results %v inputs %+v", results, inputs)
	}
	rep := Aggregate(loadPlan(t), results)
	rep.Inputs = inputs
	if got := rep.Counts(); got[StatusMissing] != 102 || got[StatusPass] != 0 {
		t.Errorf("Counts() = %v, want all 102 MISSING", got)
	}
	var b strings.Builder
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, s := range []string{
		"Ginkgo JUnit: " + filepath.Join(dir, "junit_e2e.xml") + ": **file not found**",
		"go test -json: " + filepath.Join(dir, "unit.json") + ": **file not found**",
		"PASS 0, FAIL 0, SKIP 0, MISSING 102 of 102",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q", s)
		}
	}

	// One present, one missing; a malformed file is an error naming it.
	junit := writeFile(t, "junit.xml", junitFixture)
	results, inputs, err = ReadInputs(junit, filepath.Join(dir, "unit.json"))
	if err != nil || len(results) != 9 || !inputs[0].Found || inputs[0].Tests != 9 || inputs[1].Found {
		t.Errorf("ReadInputs(junit, missing) = %d results, %+v, %v", len(results), inputs, err)
	}
	bad := writeFile(t, "unit.json", "not json\n")
	if _, _, err := ReadInputs(junit, bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("malformed go test -json: err = %v, want error naming %s", err, bad)
	}
	// An empty path means "not given".
	_, inputs, err = ReadInputs("", "")
	if err != nil || inputs[0].Found || inputs[0].Path != "" {
		t.Errorf("ReadInputs(\"\", \"\") = %+v, %v", inputs, err)
	}
}

func TestWriteMarkdownFull(t *testing.T) {
	plan := loadPlan(t)
	junit := writeFile(t, "junit.xml", junitFixture)
	unit := writeFile(t, "unit.json", goTestFixture)
	results, inputs, err := ReadInputs(junit, unit)
	if err != nil {
		t.Fatal(err)
	}
	// Many tests naming one id: the evidence list is truncated.
	for i := 0; i < 6; i++ {
		results = append(results, TestResult{Source: SourceGoTest, Name: fmt.Sprintf("TestMany/S-V7_case_%d", i), Status: StatusPass, IDs: []string{"S-V7"}})
	}
	rep := Aggregate(plan, results)
	rep.Inputs = inputs

	var b strings.Builder
	if err := rep.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	t.Log("\n" + md)

	rows := map[string]string{}
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		id := strings.TrimSpace(strings.SplitN(line[2:], "|", 2)[0])
		rows[id] = line
	}
	for _, it := range plan.Items {
		row, ok := rows[it.ID]
		if !ok {
			t.Errorf("markdown has no row for %s", it.ID)
			continue
		}
		if want := fmt.Sprintf("| %s | %s | ", it.ID, it.Level); !strings.HasPrefix(row, want) {
			t.Errorf("row for %s = %q, want prefix %q", it.ID, row, want)
		}
	}
	counts := rep.Counts()
	summary := fmt.Sprintf("PASS %d, FAIL %d, SKIP %d, MISSING %d of 102", counts[StatusPass], counts[StatusFail], counts[StatusSkip], counts[StatusMissing])
	if counts[StatusPass]+counts[StatusFail]+counts[StatusSkip]+counts[StatusMissing] != 102 {
		t.Errorf("counts %v do not add up to 102", counts)
	}
	for _, s := range []string{
		"# Conformance report: kep-6276, kep-6277",
		"## Environment\n\nNot recorded (no environment.json next to the JUnit report).",
		"**" + summary + "**",
		"Ginkgo JUnit: " + junit + " (9 test results)",
		"go test -json: " + unit + " (11 test results)",
		"## kep-6276", "## kep-6277",
		"| id | level | result | evidence | item |",
		"| D-E1 | e2e | SKIP | Deployment skips<br>reason: needs a kubelet |",
		"| D-U2 | unit | SKIP | TestBuild/D-U2_skip<br>reason: u_test.go:7: needs a kubelet |",
		"| D-I3 | integration | FAIL | Deployment fails<br>failure: Expected &lt;int&gt;: 1 to equal &lt;int&gt;: 2 |",
		"| D-I2 | integration | PASS | Deployment D-I2 creation ordering |",
		"| S-E1 | e2e | PASS | StatefulSet \\| piped |",
		"| S-V7 | unit | PASS | TestMany/S-V7_case_0; TestMany/S-V7_case_1; TestMany/S-V7_case_2; … (+3 more) |",
		"| S-P9 | prr | MISSING | none |",
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
	if counts[StatusMissing] == 0 || !strings.Contains(md, "| MISSING |") {
		t.Errorf("MISSING items are not shown as MISSING")
	}
}

func TestParseStatus(t *testing.T) {
	for in, want := range map[string]Status{"FAIL": StatusFail, "fail": StatusFail, " Missing ": StatusMissing, "skip": StatusSkip, "PASS": StatusPass} {
		if got, err := ParseStatus(in); err != nil || got != want {
			t.Errorf("ParseStatus(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseStatus("FAILED"); err == nil {
		t.Errorf("ParseStatus(FAILED) succeeded")
	}
}

// Without go test -json, unit-level items are SKIP with the reason, not
// MISSING; an e2e spec naming a unit id (S-U12's twin) still decides it; with
// the input present nothing is synthesised.
func TestUnitTestsNotRunAreSkippedWithAReason(t *testing.T) {
	plan := loadPlan(t)
	notRun := []Input{{Source: SourceJUnit, Found: true}, {Source: SourceGoTest, Path: "unit.json"}}
	e2e := []TestResult{{Source: SourceJUnit, Name: "crash spec", Status: StatusPass, IDs: []string{"S-U12"}}}
	rep := Aggregate(plan, append(e2e, UnitTestsNotRun(plan, notRun)...))
	if res, _ := rep.Get("D-U1"); res.Status != StatusSkip || !strings.Contains(evidenceCell(res), "make test writes unit.json") {
		t.Errorf("D-U1 = %s (%s), want SKIP naming make test", res.Status, evidenceCell(res))
	}
	if res, _ := rep.Get("S-U12"); res.Status != StatusPass {
		t.Errorf("S-U12 = %s, want PASS from its e2e twin", res.Status)
	}
	if res, _ := rep.Get("D-I1"); res.Status != StatusMissing {
		t.Errorf("D-I1 = %s, want MISSING: only unit-level items are skipped", res.Status)
	}
	found := []Input{{Source: SourceGoTest, Path: "unit.json", Found: true}}
	if got := UnitTestsNotRun(plan, found); len(got) != 0 {
		t.Errorf("with unit.json present, %d results were synthesised", len(got))
	}
}
