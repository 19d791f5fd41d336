// Package testplan holds the project's machine-readable copy of the KEP-6276
// (Deployment) and KEP-6277 (StatefulSet) test plans and turns test results
// into a per-item coverage report.
//
// testplan.yaml is the shared test plan, byte for byte, plus the ids the
// project added for KEP sentences the plan has no item for (each after a
// "# project-added" comment, quoting its sentence: ProjectAddedMarker); it
// is embedded so that nothing outside this module is read at run time.
package testplan

import (
	_ "embed"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

//go:embed testplan.yaml
var embedded []byte

// ProjectAddedMarker starts the comment line in front of an id the project
// added to the KEP's test plan; the id's text quotes the KEP sentence it checks.
const ProjectAddedMarker = "# project-added"

// Levels accepted in the test plan.
const (
	LevelUnit        = "unit"
	LevelIntegration = "integration"
	LevelE2E         = "e2e"
	LevelPRR         = "prr"
)

var validLevels = map[string]bool{
	LevelUnit:        true,
	LevelIntegration: true,
	LevelE2E:         true,
	LevelPRR:         true,
}

// Item is one test-plan entry.
type Item struct {
	ID    string
	KEP   string // top-level key of the file, e.g. "kep-6276"
	Level string // unit | integration | e2e | prr
	Text  string
}

// Plan is the ordered list of test-plan items (file order).
type Plan struct {
	Items []Item
}

// Load parses the embedded copy of the test plan.
func Load() (*Plan, error) {
	p, err := Parse(embedded)
	if err != nil {
		return nil, fmt.Errorf("embedded testplan.yaml: %w", err)
	}
	return p, nil
}

type rawItem struct {
	ID    string `json:"id"`
	Level string `json:"level"`
	Text  string `json:"text"`
}

// IDPattern is the grammar of a test-plan id: the KEP's letter (D for
// KEP-6276, Deployment; S for KEP-6277, StatefulSet), a dash, the kind of
// item in one or two capitals (U unit, I integration, E e2e, V validation,
// P production readiness) and its number: D-U1, S-E14. It is written here
// only; everything else matches ids through IsID and IDsIn.
const IDPattern = `[DS]-[A-Z]{1,2}[0-9]+`

var (
	idShape     = regexp.MustCompile(`^` + IDPattern + `$`)
	idCandidate = regexp.MustCompile(IDPattern)
)

// IsID reports whether s is exactly one id in the test plan's grammar
// (whether the plan has it is Plan.Get's question).
func IsID(s string) bool { return idShape.MatchString(s) }

// topLevelKey matches a block-style top-level mapping key at column 0.
var topLevelKey = regexp.MustCompile(`^([^\s#"'{\[-][^:#]*):`)

// Parse parses a test plan document: a mapping from KEP name to a list of
// {id, level, text} entries. Items keep file order (KEPs in the order their
// keys appear, items in list order). Ids must be unique and shaped like
// D-U1 / S-E14, level must be one of unit|integration|e2e|prr and text must
// be non-empty.
func Parse(data []byte) (*Plan, error) {
	var raw map[string][]rawItem
	if err := yaml.UnmarshalStrict(data, &raw); err != nil {
		return nil, fmt.Errorf("parsing test plan: %w", err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("parsing test plan: no KEP sections found")
	}

	// sigs.k8s.io/yaml goes through JSON, so map order is lost; recover the
	// order of the top-level keys from the document itself.
	pos := map[string]int{}
	for i, line := range strings.Split(string(data), "\n") {
		if m := topLevelKey.FindStringSubmatch(line); m != nil {
			k := strings.TrimSpace(m[1])
			if _, seen := pos[k]; !seen {
				pos[k] = i
			}
		}
	}
	keps := make([]string, 0, len(raw))
	for k := range raw {
		keps = append(keps, k)
	}
	sort.Slice(keps, func(i, j int) bool {
		pi, iok := pos[keps[i]]
		pj, jok := pos[keps[j]]
		switch {
		case iok && jok:
			return pi < pj
		case iok != jok:
			return iok
		default:
			return keps[i] < keps[j]
		}
	})

	p := &Plan{}
	seen := map[string]string{}
	for _, kep := range keps {
		for i, r := range raw[kep] {
			id := strings.TrimSpace(r.ID)
			switch {
			case id == "":
				return nil, fmt.Errorf("test plan %s: entry #%d has no id", kep, i+1)
			case !IsID(id):
				return nil, fmt.Errorf("test plan %s: id %q is not shaped like D-U1/S-E14 (%s)", kep, id, IDPattern)
			}
			if prev, dup := seen[id]; dup {
				return nil, fmt.Errorf("test plan %s: duplicate id %s (already defined under %s)", kep, id, prev)
			}
			seen[id] = kep
			if !validLevels[r.Level] {
				return nil, fmt.Errorf("test plan %s: id %s has invalid level %q (want unit|integration|e2e|prr)", kep, id, r.Level)
			}
			if strings.TrimSpace(r.Text) == "" {
				return nil, fmt.Errorf("test plan %s: id %s has empty text", kep, id)
			}
			p.Items = append(p.Items, Item{ID: id, KEP: kep, Level: r.Level, Text: r.Text})
		}
	}
	if len(p.Items) == 0 {
		return nil, fmt.Errorf("parsing test plan: no items found")
	}
	return p, nil
}

// IDs returns every item id in plan order.
func (p *Plan) IDs() []string {
	out := make([]string, len(p.Items))
	for i, it := range p.Items {
		out[i] = it.ID
	}
	return out
}

// Get returns the item with the given id.
func (p *Plan) Get(id string) (Item, bool) {
	for _, it := range p.Items {
		if it.ID == id {
			return it, true
		}
	}
	return Item{}, false
}

// KEPs returns the KEP names in plan order.
func (p *Plan) KEPs() []string {
	var out []string
	seen := map[string]bool{}
	for _, it := range p.Items {
		if !seen[it.KEP] {
			seen[it.KEP] = true
			out = append(out, it.KEP)
		}
	}
	return out
}

// IDsIn extracts every test-plan-shaped id (IDPattern) from s,
// e.g. from a Go test name "TestBuildWorkload/D-U1_compiles_constraints", a
// Ginkgo label list "[D-I2, Serial, Feature:GenericWorkload]" or spec text.
// An id must be delimited by non-alphanumeric characters (or the start/end of
// s): underscore, slash, space, comma, brackets all count as boundaries, so
// "D-U1" is not found in "D-U10" and nothing is found in "XD-U1".
// Ids are returned in order of first appearance, without duplicates.
func IDsIn(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, loc := range idCandidate.FindAllStringIndex(s, -1) {
		start, end := loc[0], loc[1]
		if start > 0 {
			r, _ := utf8.DecodeLastRuneInString(s[:start])
			if isAlnum(r) {
				continue
			}
		}
		if end < len(s) {
			r, _ := utf8.DecodeRuneInString(s[end:])
			if isAlnum(r) {
				continue
			}
		}
		id := s[start:end]
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

func isAlnum(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}
