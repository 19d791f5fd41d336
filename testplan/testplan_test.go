package testplan

import (
	"bytes"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// idLines counts the "id:" entries of the plan's text, independently of
// the YAML parser: the number of items is derived, never written down.
func idLines(t *testing.T) int {
	t.Helper()
	n := regexp.MustCompile(`(?m)^\s*-?\s*\{?\s*id:\s*`+IDPattern+`\b`).FindAllIndex(embedded, -1)
	if len(n) == 0 {
		t.Fatal("no id: entries in testplan.yaml")
	}
	return len(n)
}

func TestLoadEmbedded(t *testing.T) {
	p, err := Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	total := idLines(t)
	if got := len(p.Items); got != total {
		t.Fatalf("Load: %d items, testplan.yaml has %d id entries", got, total)
	}
	if first := p.Items[0]; first.ID != "D-U1" || first.KEP != "kep-6276" || first.Level != LevelUnit {
		t.Errorf("first item = %+v, want D-U1 / kep-6276 / unit", first)
	}
	if last := p.Items[len(p.Items)-1]; last.ID != "S-P12" || last.KEP != "kep-6277" || last.Level != LevelPRR {
		t.Errorf("last item = %+v, want S-P12 / kep-6277 / prr", last)
	}
	if got, want := p.KEPs(), []string{"kep-6276", "kep-6277"}; !reflect.DeepEqual(got, want) {
		t.Errorf("KEPs() = %v, want %v", got, want)
	}

	perKEP := map[string]int{}
	seen := map[string]bool{}
	kepSwitches := 0
	for i, it := range p.Items {
		if seen[it.ID] {
			t.Errorf("duplicate id %s", it.ID)
		}
		seen[it.ID] = true
		perKEP[it.KEP]++
		if i > 0 && p.Items[i-1].KEP != it.KEP {
			kepSwitches++
		}
		wantPrefix := map[string]string{"kep-6276": "D-", "kep-6277": "S-"}[it.KEP]
		if !strings.HasPrefix(it.ID, wantPrefix) {
			t.Errorf("id %s is under %s, want prefix %q", it.ID, it.KEP, wantPrefix)
		}
		if got := IDsIn(it.ID); len(got) != 1 || got[0] != it.ID {
			t.Errorf("IDsIn(%q) = %v: plan id not recognisable in test names", it.ID, got)
		}
		if strings.TrimSpace(it.Text) == "" {
			t.Errorf("id %s has empty text", it.ID)
		}
	}
	if kepSwitches != 1 {
		t.Errorf("items of the two KEPs are interleaved (%d switches), want file order", kepSwitches)
	}
	if perKEP["kep-6276"]+perKEP["kep-6277"] != total || perKEP["kep-6276"] == 0 || perKEP["kep-6277"] == 0 {
		t.Errorf("items per KEP = %v", perKEP)
	}

	ids := p.IDs()
	if len(ids) != total || ids[0] != "D-U1" || ids[1] != "D-U2" {
		t.Errorf("IDs() = %v...", ids[:3])
	}
	it, ok := p.Get("S-E14")
	if !ok || it.Level != LevelE2E || it.KEP != "kep-6277" || !strings.Contains(it.Text, "Template-generated claim") {
		t.Errorf("Get(S-E14) = %+v, %v", it, ok)
	}
	it, ok = p.Get("D-E10")
	if !ok || it.Level != LevelE2E || !strings.Contains(it.Text, "ProgressDeadlineExceeded") {
		t.Errorf("Get(D-E10) = %+v, %v", it, ok)
	}
	if _, ok := p.Get("D-U99"); ok {
		t.Errorf("Get(D-U99) found an item that is not in the plan")
	}
}

// The embedded copy must be the testplan.yaml file in this directory (the
// shared test plan plus the project-added ids).
func TestEmbeddedMatchesFile(t *testing.T) {
	onDisk, err := os.ReadFile("testplan.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, embedded) {
		t.Fatalf("embedded test plan differs from testplan.yaml")
	}
	if !bytes.HasPrefix(embedded, []byte("#")) {
		t.Errorf("embedded test plan lost its leading comments")
	}
}

func TestParseKeepsFileOrder(t *testing.T) {
	doc := `# comment: with a colon
kep-9:
  - {id: S-U2, level: unit, text: "second kep, first item"}
  - {id: S-U1, level: e2e, text: "second kep, second item"}
kep-10:  # trailing comment
  - {id: D-E3, level: prr, text: "x"}
  - id: D-I1
    level: integration
    text: block style
`
	p, err := Parse([]byte(doc))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := []Item{
		{ID: "S-U2", KEP: "kep-9", Level: "unit", Text: "second kep, first item"},
		{ID: "S-U1", KEP: "kep-9", Level: "e2e", Text: "second kep, second item"},
		{ID: "D-E3", KEP: "kep-10", Level: "prr", Text: "x"},
		{ID: "D-I1", KEP: "kep-10", Level: "integration", Text: "block style"},
	}
	if !reflect.DeepEqual(p.Items, want) {
		t.Errorf("Parse items =\n%+v\nwant\n%+v", p.Items, want)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		wantErr   []string // substrings of the error
	}{
		{"duplicate id", "a:\n  - {id: D-U1, level: unit, text: x}\nb:\n  - {id: D-U1, level: e2e, text: y}\n", []string{"duplicate id D-U1"}},
		{"duplicate in one kep", "a:\n  - {id: S-V1, level: unit, text: x}\n  - {id: S-V1, level: unit, text: y}\n", []string{"S-V1", "duplicate"}},
		{"bad level", "a:\n  - {id: D-U2, level: smoke, text: x}\n", []string{"D-U2", `"smoke"`, "level"}},
		{"missing level", "a:\n  - {id: D-U2, text: x}\n", []string{"D-U2", "level"}},
		{"empty text", "a:\n  - {id: S-E3, level: e2e, text: \"  \"}\n", []string{"S-E3", "empty text"}},
		{"missing text", "a:\n  - {id: S-E4, level: e2e}\n", []string{"S-E4", "empty text"}},
		{"missing id", "a:\n  - {level: e2e, text: x}\n", []string{"no id"}},
		{"bad id shape", "a:\n  - {id: D-u1, level: unit, text: x}\n", []string{`"D-u1"`}},
		{"unknown field", "a:\n  - {id: D-U1, level: unit, text: x, owner: me}\n", []string{"owner"}},
		{"empty document", "# only comments\n", []string{"no KEP sections"}},
		{"no items", "a: []\n", []string{"no items"}},
		{"not a mapping", "- just\n- a list\n", []string{"parsing test plan"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse([]byte(tc.doc))
			if err == nil {
				t.Fatalf("Parse succeeded (%d items), want error", len(p.Items))
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestIDsIn(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"TestBuildWorkload/D-U1_compiles_constraints", []string{"D-U1"}},
		{"TestBuildWorkload/D-U10_something", []string{"D-U10"}},
		{"[D-I2, Serial, Feature:GenericWorkload]", []string{"D-I2"}},
		{"[It] Deployment gang [D-E1, S-P9]", []string{"D-E1", "S-P9"}},
		{"D-U1", []string{"D-U1"}},
		{"D-U1,D-U2", []string{"D-U1", "D-U2"}},
		{"D-U1 D-U1 D-U1", []string{"D-U1"}},
		{"S-U14_ambiguous/S-V3", []string{"S-U14", "S-V3"}},
		{"(S-E10)", []string{"S-E10"}},
		{"prefix-D-U1-suffix", []string{"D-U1"}},
		{"D-PR12", []string{"D-PR12"}},
		{"XD-U1", nil},
		{"D-U1x", nil},
		{"D-U1X", nil},
		{"9D-U1", nil},
		{"D-U1S-U2", nil},
		{"éD-U1", nil},
		{"d-u1 D-u1 D-U D-1 E-U1 D-ABC1 D_U1", nil},
		{"", nil},
	} {
		if got := IDsIn(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("IDsIn(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

func TestIsID(t *testing.T) {
	for _, id := range []string{"D-U1", "S-E14", "D-PR12", "S-V8"} {
		if !IsID(id) {
			t.Errorf("IsID(%q) = false", id)
		}
	}
	for _, s := range []string{"", "D-U", "d-u1", "D-U1 ", " D-U1", "X-U1", "D-ABC1", "D_U1", "D-U1,S-U2", "TestX/D-U1"} {
		if IsID(s) {
			t.Errorf("IsID(%q) = true", s)
		}
	}
}

// An id the project added to the KEP's test plan follows a ProjectAddedMarker
// comment line and its text ends with the KEP sentence it checks, quoted, so
// the report shows which sentence the id stands for.
func TestProjectAddedIDsQuoteTheKEP(t *testing.T) {
	p, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	idLine := regexp.MustCompile(`^\s*-\s*\{\s*id:\s*(` + IDPattern + `)\b`)
	quoted := regexp.MustCompile(`"[^"]{20,}"\)?$`)
	lines := strings.Split(string(embedded), "\n")
	added := 0
	for i, line := range lines {
		if !strings.HasPrefix(strings.TrimSpace(line), ProjectAddedMarker) {
			continue
		}
		if i+1 >= len(lines) {
			t.Fatalf("line %d: %q is followed by no id", i+1, line)
		}
		m := idLine.FindStringSubmatch(lines[i+1])
		if m == nil {
			t.Errorf("line %d: %q is not followed by an id entry: %q", i+1, line, lines[i+1])
			continue
		}
		added++
		it, ok := p.Get(m[1])
		if !ok {
			t.Errorf("project-added id %s did not load", m[1])
			continue
		}
		if !quoted.MatchString(it.Text) {
			t.Errorf("project-added id %s: text %q does not end with the KEP sentence it checks, quoted", it.ID, it.Text)
		}
	}
	if added == 0 {
		t.Errorf("no %q id in testplan.yaml", ProjectAddedMarker)
	}
}
