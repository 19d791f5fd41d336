// Package variant reads the header of a mutation variant, the comment lines
// in front of the diff of hack/mutation/NN-name.patch:
//
//	# Rule (KEP-6276, <section>): <the MUST the variant breaks>
//	#   <an indented line continues the previous key>
//	# Mutant: <what the variant does instead>
//	# Area: <ordering | ownership | admission | ...>
//	# Ids: <test-plan ids whose specs assert the rule, e.g. D-I3, D-U2>
//	# Seen-by: Disruptive (needs the vendor ... hook)   (optional)
//
// git apply ignores everything before "diff --git", so the header never
// changes what the patch does.
package variant

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/workload-aware/apps-harness/testplan"
)

// Variant is what a patch's header says about it.
type Variant struct {
	Name   string // NN-name (the file name without .patch)
	Path   string
	Rule   string // the "# Rule" paragraph, joined
	Mutant string // the "# Mutant" paragraph: how the variant gets it wrong
	Area   string
	// IDs are the test-plan ids whose specs assert the rule the variant
	// breaks: the specs a correct suite must fail against it.
	IDs []string
	// SeenBy names what can see the variant when not every spec can, e.g.
	// "Disruptive (needs the vendor reconfigure hook)".
	SeenBy string
}

// SeenOnlyByDisruptive reports whether the header says only Disruptive
// specs can see the variant (they run for it through the vendor hooks).
func (v Variant) SeenOnlyByDisruptive() bool {
	return strings.HasPrefix(v.SeenBy, "Disruptive")
}

// Read parses the header of the patch at path. A header without a rule, a
// mutant, an area or at least one well-formed id is an error.
func Read(path string) (Variant, error) {
	v := Variant{Name: strings.TrimSuffix(filepath.Base(path), ".patch"), Path: path}
	f, err := os.Open(path)
	if err != nil {
		return v, err
	}
	defer f.Close()
	var last *string
	var ids string
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, "#") {
			break
		}
		text := strings.TrimPrefix(line, "#")
		if strings.HasPrefix(text, "   ") && last != nil {
			*last += " " + strings.TrimSpace(text)
			continue
		}
		key, value, _ := strings.Cut(strings.TrimSpace(text), ":")
		value = strings.TrimSpace(value)
		switch {
		case strings.HasPrefix(key, "Rule"):
			v.Rule, last = strings.TrimSpace(strings.TrimPrefix(key, "Rule"))+": "+value, &v.Rule
		case key == "Mutant":
			v.Mutant, last = value, &v.Mutant
		case key == "Area":
			v.Area, last = value, &v.Area
		case key == "Ids":
			ids, last = value, &ids
		case key == "Seen-by":
			v.SeenBy, last = value, &v.SeenBy
		default:
			last = nil
		}
	}
	if err := s.Err(); err != nil {
		return v, err
	}
	if v.Rule == "" || v.Mutant == "" || v.Area == "" {
		return v, fmt.Errorf("%s: the header must say which KEP rule the variant breaks (# Rule ...:), how (# Mutant:) and its # Area:", path)
	}
	v.IDs, err = parseIDs(ids)
	if err != nil {
		return v, fmt.Errorf("%s: # Ids: %w", path, err)
	}
	return v, nil
}

// parseIDs splits "D-I3, D-U2" (commas, spaces or both) into ids.
func parseIDs(s string) ([]string, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	if len(fields) == 0 {
		return nil, fmt.Errorf("missing: name the test-plan ids whose specs assert the rule the variant breaks (e.g. # Ids: D-I3, D-U2)")
	}
	var ids []string
	for _, id := range fields {
		if !testplan.IsID(id) {
			return nil, fmt.Errorf("%q is not a test-plan id (want e.g. D-I3 or S-U14)", id)
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// ReadAll reads every NN-name.patch in dir, in name order. The error joins
// every header that does not parse (each names its file); the variants whose
// header does are returned either way.
func ReadAll(dir string) ([]Variant, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "[0-9][0-9]-*.patch"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no NN-name.patch in %s", dir)
	}
	slices.Sort(paths)
	var out []Variant
	var errs []error
	for _, p := range paths {
		v, err := Read(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, v)
	}
	return out, errors.Join(errs...)
}
