package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/workload-aware/apps-harness/testplan"
)

// fakeTree writes a module whose only unit test names the unit-level ids,
// and a dry-run report with one spec for every other plan id except skip.
func fakeTree(t *testing.T, skip string) (root, specs, list string) {
	t.Helper()
	plan, err := testplan.Load()
	if err != nil {
		t.Fatal(err)
	}
	root = t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("go.mod", "module m\n")
	src := "package a\n\nimport \"testing\"\n\nfunc TestUnits(t *testing.T) {\n"
	var reports []types.SpecReport
	for _, it := range plan.Items {
		switch {
		case it.ID == skip:
		case it.Level == testplan.LevelUnit:
			src += fmt.Sprintf("\tt.Run(%q, func(t *testing.T) {})\n", it.ID+"_case")
		default:
			reports = append(reports, types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: "spec", LeafNodeLabels: []string{it.ID}})
		}
	}
	write("controllers/a/a_test.go", src+"}\n")
	data, err := json.Marshal([]types.Report{{SpecReports: reports}})
	if err != nil {
		t.Fatal(err)
	}
	specs = write("specs.json", string(data))
	list = write("list.txt", "m/controllers/a TestUnits\n")
	return root, specs, list
}

func TestVerifyFailsWhenAnIDHasNoTest(t *testing.T) {
	root, specs, list := fakeTree(t, "")
	if rc := run([]string{"verify", "--specs", specs, "--unit-list", list, "--module-root", root}); rc != 0 {
		t.Errorf("every id covered: exit status %d, want 0", rc)
	}
	for _, id := range []string{"D-I2", "S-U3"} {
		root, specs, list := fakeTree(t, id)
		if rc := run([]string{"verify", "--specs", specs, "--unit-list", list, "--module-root", root}); rc != 1 {
			t.Errorf("%s has no test: exit status %d, want 1", id, rc)
		}
	}
	if rc := run([]string{"verify", "--specs", specs}); rc != 2 {
		t.Errorf("missing --unit-list: exit status %d, want 2", rc)
	}
}
