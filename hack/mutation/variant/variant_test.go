package variant

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const diff = `diff --git a/x.go b/x.go
--- a/x.go
+++ b/x.go
@@ -1 +1 @@
-a
+b
`

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRead(t *testing.T) {
	p := write(t, t.TempDir(), "07-x.patch", `# Rule (KEP-6276, Scaling): the quorum is raised
#   before pods are created.
# Mutant: raised afterwards.
# Area: ordering
# Ids: D-I3, D-U2 D-I3
# Seen-by: Disruptive (needs the vendor reconfigure hook)
`+diff)
	v, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if v.Name != "07-x" || v.Rule != "(KEP-6276, Scaling): the quorum is raised before pods are created." || v.Area != "ordering" {
		t.Errorf("header: %+v", v)
	}
	if !slices.Equal(v.IDs, []string{"D-I3", "D-U2"}) {
		t.Errorf("ids %q: want D-I3 and D-U2, once each", v.IDs)
	}
	if !v.SeenOnlyByDisruptive() {
		t.Error("Seen-by: Disruptive not recognised")
	}
}

func TestReadRejects(t *testing.T) {
	const head = "# Rule (KEP-6277, X): y.\n# Mutant: z.\n# Area: admission\n"
	for name, content := range map[string]string{
		"no header":   diff,
		"no ids":      head + diff,
		"empty ids":   head + "# Ids:\n" + diff,
		"not an id":   head + "# Ids: S-V1, gates\n" + diff,
		"no mutant":   "# Rule (KEP-6277, X): y.\n# Area: admission\n# Ids: S-V1\n" + diff,
		"ids in diff": head + diff + "# Ids: S-V1\n",
	} {
		p := write(t, t.TempDir(), "01-x.patch", content)
		if _, err := Read(p); err == nil {
			t.Errorf("%s: accepted", name)
		} else if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: the error does not name the patch: %v", name, err)
		}
	}
}

func TestReadAll(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "02-b.patch", "# Rule (KEP-6277, X): y.\n# Mutant: z.\n# Area: a\n# Ids: S-V1\n"+diff)
	write(t, dir, "01-a.patch", "# Rule (KEP-6277, X): y.\n# Mutant: z.\n# Area: a\n"+diff)
	write(t, dir, "README.md", "not a patch")
	vs, err := ReadAll(dir)
	if err == nil || !strings.Contains(err.Error(), "01-a.patch") {
		t.Errorf("want the error to name 01-a.patch, got %v", err)
	}
	if len(vs) != 1 || vs[0].Name != "02-b" {
		t.Errorf("want the one good variant, got %+v", vs)
	}
}

// TestPatchHeaders keeps every real variant's header complete.
func TestPatchHeaders(t *testing.T) {
	vs, err := ReadAll("..")
	if err != nil {
		t.Error(err)
	}
	if len(vs) < 25 {
		t.Errorf("%d variants in hack/mutation, want at least 25", len(vs))
	}
}

func TestReadCorrectVariant(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "03-x.patch", `# Allowed (KEP-6277, Feature gate): "the StatefulSet side
#   ships on its own gate"
# Choice: only KEP-6277.
# Area: scope
# Ids: S-I1
# Implements: KEP-6277
`+diff)
	v, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Correct() || v.Choice != "only KEP-6277." || v.ImplementsKEP("KEP-6276") || !v.ImplementsKEP("KEP-6277") {
		t.Errorf("header: %+v", v)
	}
	both := write(t, dir, "04-y.patch", "# Allowed (KEP-6276, Names): \"any name\"\n# Choice: other names\n# Area: names\n# Ids: D-I1\n"+diff)
	if v, err := Read(both); err != nil || !v.ImplementsKEP("KEP-6276") || !v.ImplementsKEP("KEP-6277") {
		t.Errorf("without # Implements a variant implements both KEPs: %+v, %v", v, err)
	}
	for name, header := range map[string]string{
		"no choice":   "# Allowed (KEP-6276, Names): \"x\"\n# Area: names\n# Ids: D-I1\n",
		"mixed kinds": "# Allowed (KEP-6276, Names): \"x\"\n# Choice: y\n# Mutant: z\n# Area: names\n# Ids: D-I1\n",
		"unknown KEP": "# Allowed (KEP-6276, Names): \"x\"\n# Choice: y\n# Area: names\n# Ids: D-I1\n# Implements: KEP-1\n",
	} {
		if _, err := Read(write(t, dir, "09-bad.patch", header+diff)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The project's own patches: hack/mutation/ holds wrong variants only and
// hack/variants/ correct ones only, each with a header that parses.
func TestTheProjectsVariants(t *testing.T) {
	for dir, correct := range map[string]bool{"../../mutation": false, "../../variants": true} {
		vs, err := ReadAll(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			if v.Correct() != correct {
				t.Errorf("%s: correct=%t, but it is in %s", v.Path, v.Correct(), dir)
			}
		}
	}
}
