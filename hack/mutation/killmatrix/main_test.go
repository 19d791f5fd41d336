package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const header = `# Rule (KEP-6276, Scaling): the quorum is raised
#   before pods are created.
# Mutant: raised afterwards.
# Area: ordering
# Ids: D-I3, D-U2
`

const diff = `diff --git a/x.go b/x.go
--- a/x.go
+++ b/x.go
@@ -1 +1 @@
-a
+b
`

const junit = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="2" disabled="0" errors="0" failures="1" time="1">
  <testsuite name="WAS" package="/x" tests="2" disabled="0" skipped="0" errors="0" failures="1" time="1" timestamp="2026-12-01T00:00:00">
    <properties><property name="SuiteLabels" value="[]"></property><property name="LabelFilter" value=""></property></properties>
    <testcase name="[It] raises the quorum before pods [KEP-6276, D-I3]" classname="WAS" status="failed" time="1">
      <failure message="pod created first" type="failed">pod created first</failure>
    </testcase>
    <testcase name="[It] compiles the Workload [KEP-6276, D-I1]" classname="WAS" status="passed" time="1"></testcase>
  </testsuite>
</testsuites>
`

const passing = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="1" disabled="0" errors="0" failures="0" time="1">
  <testsuite name="WAS" package="/x" tests="1" disabled="0" skipped="0" errors="0" failures="0" time="1" timestamp="2026-12-01T00:00:00">
    <properties><property name="SuiteLabels" value="[]"></property></properties>
    <testcase name="[It] compiles the Workload [KEP-6276, D-I1]" classname="WAS" status="passed" time="1"></testcase>
  </testsuite>
</testsuites>
`

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestMatrix(t *testing.T) {
	patches, results := t.TempDir(), t.TempDir()
	for _, name := range []string{"01-killed", "02-survivor", "03-no-apply", "04-check", "05-timeout", "06-not-selected"} {
		h := header
		if name == "02-survivor" {
			h += "# Seen-by: Disruptive (needs the vendor reconfigure hook)\n"
		}
		write(t, filepath.Join(patches, name+".patch"), h+diff)
	}
	write(t, filepath.Join(results, "01-killed", "outcome"), "ran 1\n")
	write(t, filepath.Join(results, "01-killed", "junit_e2e.xml"), junit)
	write(t, filepath.Join(results, "01-killed", "seconds"), "245\n")
	write(t, filepath.Join(results, "02-survivor", "outcome"), "ran 0\n")
	write(t, filepath.Join(results, "02-survivor", "junit_e2e.xml"), passing)
	write(t, filepath.Join(results, "02-survivor", "label-filter"), "!Disruptive\n")
	write(t, filepath.Join(results, "03-no-apply", "outcome"), "not-applied\nerror: patch failed: x.go:1\n")
	write(t, filepath.Join(results, "04-check", "outcome"), "check-failed\nno Workload within 30s\n")
	write(t, filepath.Join(results, "05-timeout", "outcome"), "ran 1\n")
	write(t, filepath.Join(results, "05-timeout", "junit_e2e.xml"), passing)

	base, err := readBaseline("", results)
	if err != nil || base.Present {
		t.Fatalf("no reference/ directory: want no baseline, got %+v, %v", base, err)
	}
	rows, err := collect(patches, results, base)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Verdict{"01-killed": Killed, "02-survivor": Survived, "03-no-apply": Unmeasured, "04-check": Unmeasured, "05-timeout": Unmeasured}
	if len(rows) != len(want) {
		t.Fatalf("got %d rows, want %d (06 was not run)", len(rows), len(want))
	}
	for _, r := range rows {
		if r.Verdict != want[r.Name] {
			t.Errorf("%s: verdict %s, want %s", r.Name, r.Verdict, want[r.Name])
		}
	}
	if got := rows[0].Failed; len(got) != 1 || got[0] != "raises the quorum before pods [D-I3]: pod created first" {
		t.Errorf("01 failed specs: %q", got)
	}
	if rows[0].Rule != "(KEP-6276, Scaling): the quorum is raised before pods are created." {
		t.Errorf("rule: %q", rows[0].Rule)
	}
	if !failed(base, rows) {
		t.Error("a survivor must fail the run")
	}
	if failed(base, rows[:1]) {
		t.Error("only killed variants must pass the run")
	}

	var b strings.Builder
	render(&b, ScopeAll, base, rows)
	out := b.String()
	for _, s := range []string{
		"No baseline run",
		"5 variants run: 1 killed, 1 SURVIVED, 3 not measured.",
		"Scope: **all**",
		"| 01-killed | ordering | D-I3, D-U2 | killed (1) | raises the quorum before pods [D-I3]: pod created first | 4m5s |",
		"| 02-survivor | ordering | D-I3, D-U2 | **SURVIVED** | none (only Disruptive (needs the vendor reconfigure hook) can see it) | ? |",
		"!!! SURVIVED 02-survivor",
		"label filter: !Disruptive",
		"ids: D-I3, D-U2",
		"!!! NOT MEASURED 03-no-apply",
		"why: not-applied: error: patch failed: x.go:1",
		"the prerequisite check",
		"no baseline ran the check",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("matrix lacks %q:\n%s", s, out)
		}
	}
}

// A spec that fails against the unmutated reference kills nothing.
func TestBaseline(t *testing.T) {
	patches, results := t.TempDir(), t.TempDir()
	for _, name := range []string{"01-killed", "02-only-baseline-failures"} {
		write(t, filepath.Join(patches, name+".patch"), header+diff)
		write(t, filepath.Join(results, name, "outcome"), "ran 1\n")
	}
	write(t, filepath.Join(results, "01-killed", "junit_e2e.xml"), junit)
	onlyBaseline := strings.Replace(junit, "status=\"failed\" time=\"1\">\n      <failure message=\"pod created first\" type=\"failed\">pod created first</failure>", "status=\"passed\" time=\"1\">", 1)
	onlyBaseline = strings.Replace(onlyBaseline, `status="passed" time="1"></testcase>`, `status="failed" time="1"><failure message="x" type="failed">x</failure></testcase>`, 1)
	write(t, filepath.Join(results, "02-only-baseline-failures", "junit_e2e.xml"), onlyBaseline)
	// The reference fails "compiles the Workload" as well.
	write(t, filepath.Join(results, "reference", "outcome"), "ran 1\n")
	write(t, filepath.Join(results, "reference", "junit_e2e.xml"), onlyBaseline)

	base, err := readBaseline("", results)
	if err != nil || !base.Present || base.Verdict != Killed {
		t.Fatalf("baseline: %+v, %v", base, err)
	}
	rows, err := collect(patches, results, base)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("got %d rows, want 2 (reference is not a variant)", len(rows))
	}
	if rows[0].Verdict != Killed || len(rows[0].Failed) != 1 {
		t.Errorf("01: %+v", rows[0])
	}
	if rows[1].Verdict != Survived || len(rows[1].AlsoOnReference) != 1 || len(rows[1].Failed) != 0 {
		t.Errorf("02 (fails only what the reference fails): %+v", rows[1])
	}
	if !failed(base, rows[:1]) {
		t.Error("a baseline with a failed spec must fail the run")
	}
	var b strings.Builder
	render(&b, ScopeIDs, base, rows)
	for _, s := range []string{
		"Scope: **ids**",
		"!!! Baseline (the unmutated reference): 1 spec(s) FAILED",
		"compiles the Workload [D-I1]",
		"| 02-only-baseline-failures | ordering | D-I3, D-U2 | **SURVIVED** | none (and 1 failing on the reference too) |",
	} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("matrix lacks %q:\n%s", s, b.String())
		}
	}
}

// A prerequisite-check failure kills a variant only where the unmutated
// reference passed the same check.
func TestCheckFailureNeedsAGreenBaselineCheck(t *testing.T) {
	for _, tc := range []struct {
		name, baseline string
		want           Verdict
	}{
		{"baseline passed the check", "ran 0\n", Killed},
		{"baseline failed the check too", "check-failed\nno validation\n", Unmeasured},
	} {
		t.Run(tc.name, func(t *testing.T) {
			patches, results := t.TempDir(), t.TempDir()
			write(t, filepath.Join(patches, "01-x.patch"), header+diff)
			write(t, filepath.Join(results, "01-x", "outcome"), "check-failed\nno Workload within 30s\n")
			write(t, filepath.Join(results, "reference", "outcome"), tc.baseline)
			write(t, filepath.Join(results, "reference", "junit_e2e.xml"), passing)
			base, err := readBaseline("", results)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := collect(patches, results, base)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 || rows[0].Verdict != tc.want {
				t.Errorf("rows %+v: want %s", rows, tc.want)
			}
		})
	}
}
