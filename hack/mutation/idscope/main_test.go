package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/workload-aware/apps-harness/hack/mutation/variant"
	"github.com/workload-aware/apps-harness/testplan"
)

const diff = "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n"

func write(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func patch(t *testing.T, dir, name, extra string) {
	t.Helper()
	write(t, filepath.Join(dir, name+".patch"), "# Rule (KEP-6276, X): y.\n# Mutant: z.\n# Area: a\n"+extra+diff)
}

// suite writes a dry-run report: D-I3 on two specs, D-U2 on one, D-P2 on a
// Disruptive one only.
func suite(t *testing.T) string {
	t.Helper()
	spec := func(text string, labels ...string) types.SpecReport {
		return types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: text,
			ContainerHierarchyLabels: [][]string{{"KEP-6276"}}, LeafNodeLabels: labels}
	}
	data, err := json.Marshal([]types.Report{{SpecReports: []types.SpecReport{
		spec("scales", "D-I3"),
		spec("orders", "D-I3", "D-U2"),
		spec("toggles the gate", "Serial", "Disruptive", "D-P2"),
		spec("something else", "D-I1"),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return write(t, filepath.Join(t.TempDir(), "specs.json"), string(data))
}

func TestCheck(t *testing.T) {
	specs, err := testplan.ReadGinkgoDryRun(suite(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	patch(t, dir, "01-good", "# Ids: D-I3, D-U2\n")
	patch(t, dir, "02-gate", "# Ids: D-P2\n# Seen-by: Disruptive (needs the vendor reconfigure hook)\n")
	patch(t, dir, "03-unknown-id", "# Ids: D-I3, D-E9\n")
	patch(t, dir, "04-disruptive-only", "# Ids: D-P2\n")
	variants, err := variant.ReadAll(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = check(variants, specs)
	if err == nil {
		t.Fatal("check accepted an id with no spec and a variant that could run none")
	}
	msg := err.Error()
	for _, want := range []string{"03-unknown-id.patch: # Ids: D-E9 labels no spec", "04-disruptive-only.patch: # Ids: D-P2 label only Disruptive specs"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error lacks %q:\n%s", want, msg)
		}
	}
	for _, good := range []string{"01-good", "02-gate"} {
		if strings.Contains(msg, good) {
			t.Errorf("%s was rejected:\n%s", good, msg)
		}
	}
}

func TestFilters(t *testing.T) {
	specsPath := suite(t)
	dir, out := t.TempDir(), t.TempDir()
	patch(t, dir, "01-order", "# Ids: D-I3, D-U2\n")
	patch(t, dir, "02-gate", "# Ids: D-P2\n# Seen-by: Disruptive (needs the vendor reconfigure hook)\n")
	patch(t, dir, "03-scale", "# Ids: D-I3\n")
	if rc := run([]string{"--patches", dir, "--specs", specsPath, "--out", out,
		"01-order=0", "02-gate=1", "03-scale=0"}); rc != 0 {
		t.Fatalf("exit %d", rc)
	}
	for name, want := range map[string]string{
		"01-order": "(D-I3 || D-U2) && !Disruptive\n2\n",
		"02-gate":  "(D-P2)\n1\n",
		"03-scale": "(D-I3) && !Disruptive\n2\n",
		// The baseline runs every spec a variant runs, each id once.
		"reference": "((D-I3 || D-U2) && !Disruptive) || (D-P2)\n3\n",
	} {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}

	selects := func(filter string) int {
		t.Helper()
		specs, err := testplan.ReadGinkgoDryRun(specsPath)
		if err != nil {
			t.Fatal(err)
		}
		f, err := counted("x", filter, specs)
		if err != nil {
			t.Fatal(err)
		}
		return f.Specs
	}
	if n := selects("(D-P2) && !Disruptive"); n != 0 {
		t.Errorf("a Disruptive-only id without Disruptive specs selects %d specs, want 0", n)
	}

	narrowed := t.TempDir()
	if rc := run([]string{"--patches", dir, "--specs", specsPath, "--out", narrowed, "--label-filter", "KEP-6277", "01-order=0"}); rc != 0 {
		t.Fatalf("exit %d", rc)
	}
	got, _ := os.ReadFile(filepath.Join(narrowed, "01-order"))
	if string(got) != "(KEP-6277) && ((D-I3 || D-U2) && !Disruptive)\n0\n" {
		t.Errorf("LABEL_FILTER must narrow the filter: got %q", got)
	}
}

func TestRunRejects(t *testing.T) {
	specsPath := suite(t)
	dir := t.TempDir()
	patch(t, dir, "01-order", "# Ids: D-I3\n")
	patch(t, dir, "02-no-ids", "")
	if rc := run([]string{"--patches", dir, "--specs", specsPath}); rc != 1 {
		t.Errorf("a patch without # Ids: gave exit %d, want 1", rc)
	}
	os.Remove(filepath.Join(dir, "02-no-ids.patch"))
	if rc := run([]string{"--patches", dir, "--specs", specsPath}); rc != 0 {
		t.Errorf("good headers gave exit %d", rc)
	}
	if rc := run([]string{"--patches", dir, "--specs", specsPath, "01-order"}); rc != 2 {
		t.Errorf("a run without =0/=1 gave exit %d, want 2", rc)
	}
	if rc := run([]string{"--patches", dir, "--specs", specsPath, "09-missing=0"}); rc != 2 {
		t.Errorf("an unknown variant gave exit %d, want 2", rc)
	}
}

// TestRealPatches: every variant's ids fit the suite's labels as they are
// in the tree (the real check needs the compiled suite: make mutation).
func TestRealPatches(t *testing.T) {
	variants, err := variant.ReadAll("..")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := testplan.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range variants {
		for _, id := range v.IDs {
			if _, ok := plan.Get(id); !ok {
				t.Errorf("%s: # Ids: %s is not in the test plan", v.Name, id)
			}
		}
	}
}
