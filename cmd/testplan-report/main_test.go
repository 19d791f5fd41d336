package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
`

func TestReportReadsTheEnvironmentAndFailsOnFAIL(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	junit, unit := write("junit_e2e.xml", junitOneFail), write("unit.json", unitOnePass)
	if err := testplan.WriteEnvironment(filepath.Join(dir, testplan.EnvironmentFile), &testplan.Environment{
		Cluster: "existing", ServerVersion: "v1.37.2", Implementation: "vendor-controller",
	}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "testplan.md")
	if rc := run([]string{"--junit", junit, "--unit-json", unit, "--out", out}); rc != 1 {
		t.Errorf("exit status %d with a FAIL id, want 1", rc)
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"**PASS 2, FAIL 1, SKIP 1, MISSING 98 of 102**",
		"- Kubernetes version: v1.37.2\n", "- Implementation: vendor-controller\n",
		"| D-U1 | unit | PASS | TestBuild/D-U1_ok |",
		"| D-I2 | integration | FAIL | Deployment creation order<br>failure: no Workload |",
		`| D-P1 | prr | SKIP | Deployment gate off<br>reason: not selected by the label filter "!Disruptive" (Disruptive:`,
	} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report lacks %q:\n%s", s, md)
		}
	}
	if rc := run([]string{"--junit", junit, "--unit-json", unit, "--out", out, "--fail-on", ""}); rc != 0 {
		t.Errorf("--fail-on '': exit status %d, want 0", rc)
	}
	// A malformed environment record is an error, not a silent omission.
	write(testplan.EnvironmentFile, "{")
	if rc := run([]string{"--junit", junit, "--unit-json", unit, "--out", out}); rc != 2 {
		t.Errorf("malformed environment.json: exit status %d, want 2", rc)
	}
}
