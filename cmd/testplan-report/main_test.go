package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/workload-aware/apps-harness/testplan"
)

const junitOneFail = `<testsuites><testsuite name="s">
<properties><property name="LabelFilter" value="!Disruptive"></property></properties>
<testcase name="[It] Deployment Workload and PodGroups compiles one Workload [D-I1, KEP-6276]" status="passed"></testcase>
<testcase name="[It] Deployment creation order [D-I2, KEP-6276]" status="failed"><failure message="no Workload"></failure></testcase>
<testcase name="[It] Deployment gate off [D-P1, Disruptive]" status="skipped"><skipped message="skipped"></skipped></testcase>
</testsuite></testsuites>`

const unitOnePass = `{"Action":"run","Package":"p","Test":"TestBuild/D-U1_ok"}
{"Action":"pass","Package":"p","Test":"TestBuild/D-U1_ok"}
{"Action":"run","Package":"p","Test":"TestGate/D-P1_gate_off"}
{"Action":"pass","Package":"p","Test":"TestGate/D-P1_gate_off"}
`

type artifacts struct {
	t   *testing.T
	dir string
}

func newArtifacts(t *testing.T, cluster string) artifacts {
	a := artifacts{t: t, dir: t.TempDir()}
	a.write("junit_e2e.xml", junitOneFail)
	if err := testplan.WriteEnvironment(a.path(testplan.EnvironmentFile), &testplan.Environment{
		Cluster: cluster, ServerVersion: "v1.37.2", Implementation: "vendor-controller",
	}); err != nil {
		t.Fatal(err)
	}
	return a
}

func (a artifacts) path(name string) string { return filepath.Join(a.dir, name) }

// stampJUnit stamps junit_e2e.xml as hack/e2e.sh does after the suite.
func (a artifacts) stampJUnit(source string, started time.Time) artifacts {
	a.t.Helper()
	if err := testplan.WriteStamp(a.path("junit_e2e.xml"), source, started); err != nil {
		a.t.Fatal(err)
	}
	return a
}

func (a artifacts) write(name, content string) string {
	a.t.Helper()
	if err := os.WriteFile(a.path(name), []byte(content), 0o644); err != nil {
		a.t.Fatal(err)
	}
	return a.path(name)
}

func (a artifacts) read(name string) string {
	a.t.Helper()
	data, err := os.ReadFile(a.path(name))
	if err != nil {
		a.t.Fatal(err)
	}
	return string(data)
}

// report runs testplan-report on the artifacts and returns its exit status.
func (a artifacts) report(extra ...string) int {
	return run(append([]string{"--junit", a.path("junit_e2e.xml"), "--out", a.path("testplan.md")}, extra...))
}

func TestReportReadsTheEnvironmentAndFailsOnFAIL(t *testing.T) {
	a := newArtifacts(t, "local")
	unit := a.write("unit.json", unitOnePass)
	if rc := a.report("--unit-json", unit); rc != 1 {
		t.Errorf("exit status %d with a FAIL id, want 1", rc)
	}
	md := a.read("testplan.md")
	for _, s := range []string{
		"PASS 2, PARTIAL 1, REFERENCE-ONLY 0, SKIP 0, NOT-IMPLEMENTED 0, FAIL 1, MISSING ",
		"Mode: harness:",
		"- Kubernetes version: v1.37.2\n", "- Implementation: vendor-controller\n",
		"| D-U1 | unit | PASS | none | TestBuild/D-U1_ok |",
		"| D-I2 | integration | FAIL | Deployment creation order (FAIL: no Workload) | none |",
		`| D-P1 | prr | PARTIAL | Deployment gate off (SKIP: not selected by the label filter "!Disruptive" (Disruptive:`,
		"| TestGate/D-P1_gate_off |",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("report lacks %q:\n%s", s, md)
		}
	}
	if page := a.read("testplan.html"); !strings.Contains(page, "<!DOCTYPE html>") || !strings.Contains(page, `<tr id="D-P1" class="st-partial"`) {
		t.Errorf("testplan.html was not written next to testplan.md")
	}
	if rc := a.report("--unit-json", unit, "--fail-on", ""); rc != 0 {
		t.Errorf("--fail-on '': exit status %d, want 0", rc)
	}
	// A malformed environment record is an error, not a silent omission.
	a.write(testplan.EnvironmentFile, "{")
	if rc := a.report("--unit-json", unit); rc != 2 {
		t.Errorf("malformed environment.json: exit status %d, want 2", rc)
	}
}

// rowsWithoutReferenceColumn returns the summary line and every id row
// minus the reference column, which may say why unit.json was not read.
func rowsWithoutReferenceColumn(md string) []string {
	var out []string
	for _, line := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(line, "**PASS"):
			out = append(out, line)
		case strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| id "):
			cells := strings.Split(line, " | ")
			if len(cells) == 6 {
				cells[4] = "…"
			}
			out = append(out, strings.Join(cells, " | "))
		}
	}
	return out
}

// A vendor's report must not change because a unit.json of another commit,
// another run or unknown origin lies in $ARTIFACTS: hack/e2e.sh hands it
// over with --unit-json-if-fresh, and only a fresh one is read, and even
// that one adds REFERENCE-ONLY rows, never a PASS.
func TestStaleOrForeignUnitJSONCannotChangeAVendorsReport(t *testing.T) {
	runStarted := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	flags := []string{"--source", "abc123", "--run-started", runStarted.Format(time.RFC3339)}

	a := newArtifacts(t, "existing").stampJUnit("abc123", runStarted.Add(time.Second))
	a.report("--unit-json-if-fresh", a.path("unit.json"), "--source", "abc123", "--run-started", runStarted.Format(time.RFC3339))
	baseline := rowsWithoutReferenceColumn(a.read("testplan.md"))
	if len(baseline) < 10 || !strings.Contains(baseline[0], "REFERENCE-ONLY 0") {
		t.Fatalf("baseline report: %q", baseline)
	}

	for name, stamp := range map[string]func(unit string) error{
		"no stamp":     func(string) error { return nil },
		"other commit": func(u string) error { return testplan.WriteStamp(u, "fff999", runStarted.Add(time.Second)) },
		"dirty tree": func(u string) error {
			return testplan.WriteStamp(u, "abc123+dirty.0123456789ab", runStarted.Add(time.Second))
		},
		"earlier run":  func(u string) error { return testplan.WriteStamp(u, "abc123", runStarted.Add(-24*time.Hour)) },
		"edited since": func(u string) error { return stampThenEdit(u, "abc123", runStarted.Add(time.Second)) },
	} {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			a := newArtifacts(t, "existing").stampJUnit("abc123", runStarted.Add(time.Second))
			unit := a.write("unit.json", unitOnePass)
			if err := stamp(unit); err != nil {
				t.Fatal(err)
			}
			a.report(append([]string{"--unit-json-if-fresh", unit}, flags...)...)
			md := a.read("testplan.md")
			if got := rowsWithoutReferenceColumn(md); strings.Join(got, "\n") != strings.Join(baseline, "\n") {
				t.Errorf("the report changed:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(baseline, "\n"))
			}
			if strings.Contains(md, "TestBuild/D-U1_ok") || !strings.Contains(md, "ignored, it does not belong to this run") {
				t.Errorf("a unit.json of another run was read or not reported as ignored:\n%s", md)
			}
		})
	}

	// A fresh unit.json is evidence about the reference: REFERENCE-ONLY.
	fresh := newArtifacts(t, "existing").stampJUnit("abc123", runStarted.Add(time.Second))
	unit := fresh.write("unit.json", unitOnePass)
	if err := testplan.WriteStamp(unit, "abc123", runStarted.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	fresh.report(append([]string{"--unit-json-if-fresh", unit}, flags...)...)
	md := fresh.read("testplan.md")
	for _, s := range []string{
		"**PASS 1, PARTIAL 0, REFERENCE-ONLY 2, SKIP ",
		"| D-U1 | unit | REFERENCE-ONLY | none | TestBuild/D-U1_ok |",
		"| D-P1 | prr | REFERENCE-ONLY | Deployment gate off (SKIP: ",
		"stamped by make test of this run (source abc123",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("fresh unit.json in vendor mode: report lacks %q:\n%s", s, md)
		}
	}
}

func stampThenEdit(unit, source string, started time.Time) error {
	if err := testplan.WriteStamp(unit, source, started); err != nil {
		return err
	}
	return os.WriteFile(unit, []byte(unitOnePass+`{"Action":"pass","Package":"p","Test":"TestBuild/D-U2_added"}`+"\n"), 0o644)
}

func TestReportFlags(t *testing.T) {
	a := newArtifacts(t, "existing")
	for _, args := range [][]string{
		{"--unit-json", "a", "--unit-json-if-fresh", "b"},
		{"--unit-json-if-fresh", "b"},
		{"--unit-json-if-fresh", "b", "--run-started", "yesterday"},
		{"--mode", "lenient"},
		{"--fail-on", "FAILED"},
		{"stray"},
	} {
		if rc := a.report(args...); rc != 2 {
			t.Errorf("%q: exit status %d, want 2", args, rc)
		}
	}
	if rc := a.report("--html", "", "--fail-on", ""); rc != 0 {
		t.Errorf("--html '': exit status %d", rc)
	}
	if _, err := os.Stat(a.path("testplan.html")); err == nil {
		t.Errorf("--html '' wrote testplan.html")
	}
	if rc := run([]string{"frobnicate"}); rc != 2 {
		t.Errorf("unknown command: exit status %d, want 2", rc)
	}
}

func TestStampCommand(t *testing.T) {
	a := newArtifacts(t, "local")
	unit := a.write("unit.json", unitOnePass)
	if rc := run([]string{"stamp", "--unit-json", unit, "--source", "abc123", "--started", "1764600000"}); rc != 0 {
		t.Fatalf("stamp: exit status %d", rc)
	}
	st, err := testplan.ReadStamp(unit)
	if err != nil || st.Source != "abc123" || !st.Started.Equal(time.Unix(1764600000, 0)) {
		t.Errorf("stamp = %+v, %v", st, err)
	}
	if rc := run([]string{"stamp", "--unit-json", unit}); rc != 2 {
		t.Errorf("stamp without --started: exit status %d, want 2", rc)
	}
}

// idRow returns the report's table row of id ("" when absent).
func idRow(md, id string) string {
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| "+id+" | ") {
			return line
		}
	}
	return ""
}

// A Ginkgo dry run writes every spec as passed; none of them ran, so the
// report must give no PASS from it (Ginkgo v2 writes the DryRun property).
func TestDryRunJUnitGivesNoPASS(t *testing.T) {
	a := newArtifacts(t, "existing")
	a.write("junit_e2e.xml", strings.Replace(junitOneFail, `<properties>`,
		`<properties><property name="DryRun" value="true"></property>`, 1))
	a.report("--fail-on", "")
	md := a.read("testplan.md")
	if !strings.Contains(md, "**PASS 0, ") {
		t.Errorf("a dry-run JUnit produced a PASS:\n%s", md)
	}
	for _, id := range []string{"D-I1", "D-I2"} {
		if row := idRow(md, id); !strings.Contains(row, "| SKIP |") || !strings.Contains(row, testplan.DryRunReason) {
			t.Errorf("%s after a dry run: %q, want SKIP with the reason %q", id, row, testplan.DryRunReason)
		}
	}
}

// hack/e2e.sh stamps junit_e2e.xml; with --run-started the report reads it
// only when the stamp belongs to this run, and otherwise says so loudly and
// gives no PASS from it.
func TestStaleOrForeignJUnitGivesNoPASS(t *testing.T) {
	runStarted := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	flags := []string{"--source", "abc123", "--run-started", runStarted.Format(time.RFC3339), "--fail-on", ""}
	for name, c := range map[string]struct {
		stamp func(a artifacts)
		why   string
	}{
		"no stamp":     {func(artifacts) {}, "no stamp junit_e2e.stamp.json beside it"},
		"other source": {func(a artifacts) { a.stampJUnit("fff999", runStarted.Add(time.Second)) }, "written from source fff999"},
		"earlier run":  {func(a artifacts) { a.stampJUnit("abc123", runStarted.Add(-time.Hour)) }, "written by an earlier run"},
		"edited since": {func(a artifacts) {
			a.stampJUnit("abc123", runStarted.Add(time.Second))
			a.write("junit_e2e.xml", strings.Replace(junitOneFail, `status="failed"><failure message="no Workload"></failure>`, `status="passed">`, 1))
		}, "changed after junit_e2e.stamp.json was written"},
	} {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			a := newArtifacts(t, "existing")
			c.stamp(a)
			a.report(flags...)
			md := a.read("testplan.md")
			if !strings.Contains(md, "**PASS 0, ") || strings.Contains(md, "compiles one Workload") {
				t.Errorf("a JUnit of another run was read:\n%s", md)
			}
			if !strings.Contains(md, c.why) {
				t.Errorf("the report does not say why the JUnit was ignored (%q):\n%s", c.why, md)
			}
		})
	}
	// The same file, stamped by this run, is read.
	a := newArtifacts(t, "existing").stampJUnit("abc123", runStarted.Add(time.Second))
	a.report(flags...)
	if md := a.read("testplan.md"); !strings.Contains(idRow(md, "D-I1"), "| PASS |") {
		t.Errorf("a JUnit stamped by this run was not read:\n%s", md)
	}
}

// Specs the framework skipped because the implementation lacks their KEP
// are NOT-IMPLEMENTED, with the check's reason: counted on their own in the
// summary line, never PASS, never FAIL, and not failing the run.
func TestNotImplementedStatus(t *testing.T) {
	a := newArtifacts(t, "existing")
	a.write("junit_e2e.xml", `<testsuites><testsuite name="s">
<testcase name="[It] StatefulSet compiles one Workload [S-I1, KEP-6277]" status="passed"></testcase>
<testcase name="[It] Deployment compiles one Workload [D-I1, KEP-6276]" status="skipped"><skipped message="skipped - `+testplan.NotImplementedPrefix+`KEP-6276: a gang Deployment got no Workload it controls within 15s"></skipped></testcase>
<testcase name="[It] Deployment and StatefulSet skew [D-P5, S-P7, KEP-6276, KEP-6277]" status="skipped"><skipped message="skipped - `+testplan.NotImplementedPrefix+`KEP-6276: a gang Deployment got no Workload it controls within 15s"></skipped></testcase>
<testcase name="[It] Deployment creation order [D-I2, KEP-6276]" status="skipped"><skipped message="skipped - needs a kubelet"></skipped></testcase>
</testsuite></testsuites>`)
	if rc := a.report("--fail-on", "FAIL,NOT-IMPLEMENTED"); rc != 1 {
		t.Errorf("--fail-on NOT-IMPLEMENTED: exit status %d, want 1", rc)
	}
	if rc := a.report(); rc != 0 {
		t.Errorf("exit status %d with NOT-IMPLEMENTED ids, want 0 (they do not fail the run)", rc)
	}
	md := a.read("testplan.md")
	// SKIP also counts the unit-level ids: no unit.json was given.
	if !strings.Contains(md, "**PASS 1, PARTIAL 0, REFERENCE-ONLY 0, SKIP ") || !strings.Contains(md, ", NOT-IMPLEMENTED 3, FAIL 0, ") {
		t.Errorf("summary line does not count NOT-IMPLEMENTED on its own:\n%s", md)
	}
	for _, id := range []string{"D-I1", "D-P5", "S-P7"} {
		row := idRow(md, id)
		if !strings.Contains(row, "| NOT-IMPLEMENTED |") || !strings.Contains(row, "KEP-6276: a gang Deployment got no Workload it controls within 15s") {
			t.Errorf("%s: %q, want NOT-IMPLEMENTED with the reason", id, row)
		}
	}
	if row := idRow(md, "D-I2"); !strings.Contains(row, "| SKIP |") {
		t.Errorf("a plain skip became %q", row)
	}
}
