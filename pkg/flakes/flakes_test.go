package flakes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const runPass = `<testsuites><testsuite name="s" tests="3">
<testcase name="[It] a spec"></testcase>
<testcase name="[It] flaky spec"></testcase>
<testcase name="[It] skipped spec"><skipped message="no kind"></skipped></testcase>
</testsuite></testsuites>`

const runFail = `<testsuites><testsuite name="s" tests="3">
<testcase name="[It] a spec"></testcase>
<testcase name="[It] flaky spec"><failure message="Timed out after 5s&#xA;more">trace</failure></testcase>
<testcase name="[It] skipped spec"><skipped message="no kind"></skipped></testcase>
</testsuite></testsuites>`

func TestRead(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i, body := range []string{runPass, runFail, runPass} {
		p := filepath.Join(dir, "run", string(rune('a'+i))+".xml")
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	tab := Read(append(paths, filepath.Join(dir, "died-before-report.xml")))
	flaky := tab.Specs["[It] flaky spec"]
	if flaky == nil || flaky.Runs != 3 || flaky.Failed != 1 || flaky.Passed != 2 || flaky.FirstFailure != "Timed out after 5s" {
		t.Fatalf("flaky spec = %+v", flaky)
	}
	if r := flaky.Rate(); r < 0.33 || r > 0.34 {
		t.Fatalf("rate = %v, want 1/3", r)
	}
	if s := tab.Specs["[It] skipped spec"]; s.Skipped != 3 || s.Rate() != 0 {
		t.Fatalf("skipped spec = %+v", s)
	}
	if !tab.Failed() || len(tab.Missing) != 1 {
		t.Fatalf("a failure and a missing report must fail the table: %+v", tab)
	}
	var b strings.Builder
	if err := tab.WriteMarkdown(&b, "stress"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(b.String(), "4 runs, 3 specs, 1 specs failed at least once, 1 reports missing") {
		t.Fatalf("summary line wrong:\n%s", b.String())
	}
	// Flakiest first.
	for _, l := range lines {
		if strings.HasPrefix(l, "| 33% | 1 | 2 | 0 | [It] flaky spec") {
			return
		}
		if strings.HasPrefix(l, "| 0%") {
			t.Fatalf("the flaky spec is not listed first:\n%s", b.String())
		}
	}
	t.Fatalf("flaky spec row missing:\n%s", b.String())
}
