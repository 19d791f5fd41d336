package testplan

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stampedUnitJSON writes unit.json and its stamp as make test would.
func stampedUnitJSON(t *testing.T, source string, started time.Time) string {
	t.Helper()
	unit := writeFile(t, "unit.json", goTestFixture)
	if err := WriteStamp(unit, source, started); err != nil {
		t.Fatal(err)
	}
	return unit
}

func TestCheckFresh(t *testing.T) {
	runStart := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	run := Run{Source: "abc123", Started: runStart}

	fresh := stampedUnitJSON(t, "abc123", runStart.Add(time.Second))
	if st, err := run.CheckFresh(fresh); err != nil || st.Commit != "abc123" || st.SHA256 == "" || st.Finished.IsZero() {
		t.Errorf("fresh unit.json: %+v, %v", st, err)
	}
	sameSecond := stampedUnitJSON(t, "abc123", runStart)
	if _, err := run.CheckFresh(sameSecond); err != nil {
		t.Errorf("tests started in the second the run started: %v", err)
	}
	if st, err := (Run{Source: "abc123+dirty.0123456789ab", Started: runStart}).CheckFresh(stampedUnitJSON(t, "abc123+dirty.0123456789ab", runStart)); err != nil || st.Commit != "abc123" {
		t.Errorf("dirty tree: %+v, %v", st, err)
	}

	for name, tc := range map[string]struct {
		unit string
		run  Run
		want string
	}{
		"no stamp":             {writeFile(t, "unit.json", goTestFixture), run, "no stamp unit.stamp.json beside it"},
		"other commit":         {stampedUnitJSON(t, "fff999", runStart.Add(time.Minute)), run, "written from source fff999, this run tests abc123"},
		"uncommitted":          {stampedUnitJSON(t, "abc123+dirty.0123456789ab", runStart.Add(time.Minute)), run, "written from source abc123+dirty.0123456789ab"},
		"earlier run":          {stampedUnitJSON(t, "abc123", runStart.Add(-time.Hour)), run, "written by an earlier run (tests started 2026-12-01T09:00:00Z, this run started 2026-12-01T10:00:00Z)"},
		"stamp without source": {stampedUnitJSON(t, "", runStart.Add(time.Minute)), run, "written from source unknown, this run tests abc123"},
		"source unknown":       {stampedUnitJSON(t, "", runStart.Add(time.Minute)), Run{Started: runStart}, "written from source unknown, this run tests unknown"},
	} {
		if _, err := tc.run.CheckFresh(tc.unit); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}

	edited := stampedUnitJSON(t, "abc123", runStart.Add(time.Minute))
	if err := os.WriteFile(edited, []byte(goTestFixture+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run.CheckFresh(edited); err == nil || !strings.Contains(err.Error(), "changed after unit.stamp.json was written") {
		t.Errorf("edited after stamping: %v", err)
	}
}

// A unit.json that does not belong to the run is recorded as ignored, with
// the reason, and contributes nothing; a fresh one is read.
func TestReadInputsChecksFreshness(t *testing.T) {
	runStart := time.Now().Add(-time.Minute)
	stale := stampedUnitJSON(t, "abc123", runStart.Add(-time.Hour))
	res, inputs, err := ReadInputs("", UnitJSON{Path: stale, Run: Run{Source: "abc123", Started: runStart}})
	if err != nil || len(res) != 0 || inputs[1].State != InputIgnored || !strings.Contains(inputs[1].Note, "earlier run") {
		t.Errorf("stale: %d results, %+v, %v", len(res), inputs[1], err)
	}
	if line := inputLine(inputs[1]); !strings.Contains(line, "ignored, it does not belong to this run: written by an earlier run") {
		t.Errorf("input line %q", line)
	}
	res, inputs, err = ReadInputs("", UnitJSON{Path: stale, Explicit: true})
	if err != nil || len(res) != 11 || !inputs[1].Used() || !strings.Contains(inputs[1].Note, "given explicitly") || !strings.Contains(inputs[1].Note, "its stamp: source abc123") {
		t.Errorf("explicit: %d results, %+v, %v", len(res), inputs[1], err)
	}
	fresh := stampedUnitJSON(t, "abc123", runStart.Add(time.Second))
	res, inputs, err = ReadInputs("", UnitJSON{Path: fresh, Run: Run{Source: "abc123", Started: runStart}})
	if err != nil || len(res) != 11 || !inputs[1].Used() || !strings.Contains(inputs[1].Note, "stamped by make test of this run (source abc123") {
		t.Errorf("fresh: %d results, %+v, %v", len(res), inputs[1], err)
	}
}

func TestSourceID(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	gitIn := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitIn("init", "-q")
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", "package a\n")
	write(".gitignore", "/_artifacts/\n")
	gitIn("add", ".")
	gitIn("commit", "-q", "-m", "one")
	clean, err := SourceID(dir)
	if err != nil || len(clean) != 40 || strings.Contains(clean, "+") {
		t.Fatalf("clean tree: %q, %v; want the bare commit", clean, err)
	}
	// Ignored files (the artifacts themselves) do not change the source.
	if err := os.MkdirAll(filepath.Join(dir, "_artifacts"), 0o755); err != nil {
		t.Fatal(err)
	}
	write("_artifacts/unit.json", "{}")
	if id, _ := SourceID(dir); id != clean {
		t.Errorf("an ignored file changed the source id: %q", id)
	}
	write("a.go", "package a // edited\n")
	edited, _ := SourceID(dir)
	write("b.go", "package a\n")
	untracked, _ := SourceID(dir)
	write("b.go", "package a // edited\n")
	untrackedEdited, _ := SourceID(dir)
	for _, id := range []string{edited, untracked, untrackedEdited} {
		if !strings.HasPrefix(id, clean+"+dirty.") {
			t.Errorf("dirty tree id %q, want %s+dirty.<digest>", id, clean)
		}
	}
	if edited == untracked || untracked == untrackedEdited {
		t.Errorf("ids %q, %q, %q: every change must change the id", edited, untracked, untrackedEdited)
	}
	if again, _ := SourceID(dir); again != untrackedEdited {
		t.Errorf("the same tree gave %q then %q", untrackedEdited, again)
	}
}

// Without git the id is a digest of the files, minus what runs write.
func TestSourceIDWithoutGit(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module m\n")
	write("a/a.go", "package a\n")
	first, err := SourceID(dir)
	if err != nil || !strings.HasPrefix(first, "tree.") {
		t.Fatalf("SourceID without git = %q, %v", first, err)
	}
	write("_artifacts/unit.json", "{}")
	write(".cache/x", "y")
	if id, _ := SourceID(dir); id != first {
		t.Errorf("artifacts changed the id: %q, want %q", id, first)
	}
	write("a/a.go", "package a // edited\n")
	if id, _ := SourceID(dir); id == first || !strings.HasPrefix(id, "tree.") {
		t.Errorf("an edit left the id %q", id)
	}
	if _, err := SourceID(filepath.Join(dir, "absent")); err == nil {
		t.Errorf("SourceID of a missing directory succeeded")
	}
}
