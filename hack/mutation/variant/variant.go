// Package variant reads the header of a variant of the reference
// implementation, the comment lines in front of the diff of an NN-name.patch.
// Two kinds share the format and the machinery (hack/mutation.sh):
//
// A wrong variant (hack/mutation/, `make mutation`: the suite must fail):
//
//	# Rule (KEP-6276, <section>): <the MUST the variant breaks>
//	#   <an indented line continues the previous key>
//	# Mutant: <what the variant does instead>
//	# Area: <ordering | ownership | admission | ...>
//	# Ids: <test-plan ids whose specs assert the rule, e.g. D-I3, D-U2>
//	# Seen-by: Disruptive (needs the vendor ... hook)   (optional)
//
// A correct variant (hack/variants/, `make variants`: the suite must pass):
//
//	# Allowed (KEP-6277, <section>): "<the KEP text that leaves the choice open>"
//	# Choice: <what the variant does that the reference does not>
//	# Area: ...
//	# Ids: <test-plan ids whose specs the choice touches>
//	# Implements: KEP-6277   (optional: the KEPs it implements; default both)
//	# Seen-by: ...           (optional)
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
	// Allowed and Choice are a correct variant's: the KEP text that allows
	// its choice, and the choice. A correct variant has no Rule or Mutant.
	Allowed string
	Choice  string
	// Implements are the KEPs a correct variant implements (nil: both);
	// the ids of the others must be reported as not implemented.
	Implements []string
}

// Correct reports whether the header is a correct variant's (# Allowed).
func (v Variant) Correct() bool { return v.Allowed != "" }

// ImplementsKEP reports whether the variant implements kep ("KEP-6276").
func (v Variant) ImplementsKEP(kep string) bool {
	return len(v.Implements) == 0 || slices.Contains(v.Implements, kep)
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
	var ids, implements string
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
		case strings.HasPrefix(key, "Allowed"):
			v.Allowed, last = strings.TrimSpace(strings.TrimPrefix(key, "Allowed"))+": "+value, &v.Allowed
		case key == "Choice":
			v.Choice, last = value, &v.Choice
		case key == "Implements":
			implements, last = value, &implements
		default:
			last = nil
		}
	}
	if err := s.Err(); err != nil {
		return v, err
	}
	switch {
	case v.Allowed != "" || v.Choice != "":
		if v.Allowed == "" || v.Choice == "" || v.Area == "" || v.Rule != "" || v.Mutant != "" {
			return v, fmt.Errorf("%s: a correct variant's header must quote the KEP text that allows it (# Allowed (KEP-NNNN, <section>): \"...\"), say what it chose (# Choice:) and its # Area:, and have no # Rule or # Mutant", path)
		}
		for _, kep := range strings.FieldsFunc(implements, func(r rune) bool { return r == ',' || r == ' ' }) {
			if kep != "KEP-6276" && kep != "KEP-6277" {
				return v, fmt.Errorf("%s: # Implements: %q is not KEP-6276 or KEP-6277", path, kep)
			}
			v.Implements = append(v.Implements, kep)
		}
	case v.Rule == "" || v.Mutant == "" || v.Area == "":
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
