// Command idscope is the pre-flight check of the variants' "# Ids:" headers
// and, for MUTATION_SCOPE=ids, the label filter of each variant's run.
//
//	idscope --patches hack/mutation --specs specs.json [--out DIR] [--label-filter F] [NAME=DISRUPTIVE ...]
//
// specs.json is the JSON report of a dry run of the compiled suite, the one
// `make verify` makes (e2e.test --ginkgo.dry-run --ginkgo.json-report=FILE):
// every spec and its labels, without a cluster.
//
// The check: every patch's header names its ids (# Ids:), each id labels
// at least one spec of the suite, and a variant that runs without
// Disruptive specs (no "Seen-by: Disruptive") names at least one id with a
// non-Disruptive spec. Any failure names the patch; the exit code is then 1
// and nothing is written.
//
// Each NAME=DISRUPTIVE (a variant, and 1 when its run allows Disruptive
// specs, else 0) gets, with --out, the file DIR/NAME: the Ginkgo label
// filter of its run on the first line, e.g. "(D-I3 || D-U2) && !Disruptive",
// and the number of specs it selects on the second. DIR/reference gets the
// union of the named variants' filters (the baseline must run every spec a
// variant runs). --label-filter (LABEL_FILTER) narrows them all. A filter
// that selects no spec is written with 0; the caller decides what that means.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/workload-aware/apps-harness/hack/mutation/variant"
	"github.com/workload-aware/apps-harness/testplan"
)

// disruptiveLabel is the label of specs that restart or reconfigure cluster
// components (framework.Disruptive); hack/e2e.sh leaves them out in vendor
// mode unless allowed.
const disruptiveLabel = "Disruptive"

// baselineName is the file (and result directory) of the unmutated run.
const baselineName = "reference"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("idscope", flag.ContinueOnError)
	patches := fs.String("patches", "hack/mutation", "directory of the NN-name.patch variants")
	specsPath := fs.String("specs", "", "JSON report of a dry run of the e2e suite (e2e.test --ginkgo.dry-run --ginkgo.json-report=FILE)")
	out := fs.String("out", "", "write one label filter file per NAME=DISRUPTIVE argument, and "+baselineName+", into this directory")
	labelFilter := fs.String("label-filter", "", "LABEL_FILTER: every filter is narrowed by it")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *specsPath == "" {
		fmt.Fprintln(os.Stderr, "idscope: --specs is required")
		return 2
	}
	runs, err := parseRuns(fs.Args())
	if err != nil {
		fmt.Fprintf(os.Stderr, "idscope: %v\n", err)
		return 2
	}
	specs, err := testplan.ReadGinkgoDryRun(*specsPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "idscope: %v\n", err)
		return 2
	}
	variants, err := variant.ReadAll(*patches)
	if err == nil {
		err = check(variants, specs)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "idscope: the variants' # Ids: headers do not match the suite:\n%v\n", err)
		return 1
	}
	if len(runs) == 0 {
		fmt.Printf("idscope: all %d variants name ids that label specs of the suite (%d specs)\n", len(variants), len(specs))
		return 0
	}
	filters, err := filtersFor(variants, runs, *labelFilter, specs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "idscope: %v\n", err)
		return 2
	}
	for _, f := range filters {
		fmt.Printf("%-45s %3d specs  %s\n", f.Name, f.Specs, f.Filter)
		if *out != "" {
			if err := os.WriteFile(filepath.Join(*out, f.Name), []byte(fmt.Sprintf("%s\n%d\n", f.Filter, f.Specs)), 0o644); err != nil {
				fmt.Fprintf(os.Stderr, "idscope: %v\n", err)
				return 2
			}
		}
	}
	return 0
}

// Run is one variant's run: whether it allows Disruptive specs.
type Run struct {
	Name       string
	Disruptive bool
}

func parseRuns(args []string) ([]Run, error) {
	var runs []Run
	for _, a := range args {
		name, d, ok := strings.Cut(a, "=")
		if !ok || (d != "0" && d != "1") || name == "" {
			return nil, fmt.Errorf("%q: want NAME=0 or NAME=1 (1: the run allows Disruptive specs)", a)
		}
		runs = append(runs, Run{Name: name, Disruptive: d == "1"})
	}
	return runs, nil
}

// check returns, joined, one error per variant whose ids do not fit the
// suite, each naming the patch.
func check(variants []variant.Variant, specs []testplan.Spec) error {
	labelled := map[string][]testplan.Spec{} // id -> the specs that carry it as a label
	for _, s := range specs {
		for _, l := range s.Labels {
			if testplan.IsID(l) {
				labelled[l] = append(labelled[l], s)
			}
		}
	}
	var errs []error
	for _, v := range variants {
		runnable := false // an id has a spec the variant's run selects
		missing := false
		for _, id := range v.IDs {
			got := labelled[id]
			if len(got) == 0 {
				missing = true
				errs = append(errs, fmt.Errorf("%s: # Ids: %s labels no spec of the suite (framework.ID(%q) in suites/)", v.Path, id, id))
			}
			runnable = runnable || slices.ContainsFunc(got, func(s testplan.Spec) bool { return !s.Disruptive || v.SeenOnlyByDisruptive() })
		}
		if !runnable && !missing {
			errs = append(errs, fmt.Errorf("%s: # Ids: %s label only Disruptive specs, which a variant without \"# Seen-by: Disruptive\" does not run in vendor mode; name an id with a non-Disruptive spec, or mark the variant",
				v.Path, strings.Join(v.IDs, ", ")))
		}
	}
	return errors.Join(errs...)
}

// Filter is the label filter of one run and how many specs it selects.
type Filter struct {
	Name   string
	Filter string
	Specs  int
}

// filtersFor returns the filter of every run, then the baseline's: the
// union of theirs, "((<ids of runs without Disruptive>) && !Disruptive) ||
// (<ids of runs with>)".
func filtersFor(variants []variant.Variant, runs []Run, labelFilter string, specs []testplan.Spec) ([]Filter, error) {
	byName := map[string]variant.Variant{}
	for _, v := range variants {
		byName[v.Name] = v
	}
	var out []Filter
	var plain, disruptive []string // the union's ids, by whether their run allows Disruptive specs
	for _, r := range runs {
		v, ok := byName[r.Name]
		if !ok {
			return nil, fmt.Errorf("%s: no such variant", r.Name)
		}
		f, err := counted(r.Name, narrow(labelFilter, idsFilter(v.IDs, r.Disruptive)), specs)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
		for _, id := range v.IDs {
			if r.Disruptive && !slices.Contains(disruptive, id) {
				disruptive = append(disruptive, id)
			} else if !r.Disruptive && !slices.Contains(plain, id) {
				plain = append(plain, id)
			}
		}
	}
	var parts []string
	if len(plain) > 0 {
		parts = append(parts, idsFilter(plain, false))
	}
	if len(disruptive) > 0 {
		parts = append(parts, idsFilter(disruptive, true))
	}
	union := strings.Join(parts, " || ")
	if len(parts) > 1 {
		union = "(" + parts[0] + ") || " + parts[1]
	}
	f, err := counted(baselineName, narrow(labelFilter, union), specs)
	if err != nil {
		return nil, err
	}
	return append(out, f), nil
}

// idsFilter selects the specs labelled with one of ids, leaving Disruptive
// ones out unless the run allows them: "(D-I3 || D-U2) && !Disruptive".
func idsFilter(ids []string, disruptive bool) string {
	f := "(" + strings.Join(ids, " || ") + ")"
	if !disruptive {
		f += " && !" + disruptiveLabel
	}
	return f
}

// narrow is f restricted by the user's LABEL_FILTER, if any.
func narrow(labelFilter, f string) string {
	if strings.TrimSpace(labelFilter) == "" {
		return f
	}
	return "(" + labelFilter + ") && (" + f + ")"
}

// counted parses filter as Ginkgo does and counts the specs it selects.
func counted(name, filter string, specs []testplan.Spec) (Filter, error) {
	match, err := types.ParseLabelFilter(filter)
	if err != nil {
		return Filter{}, fmt.Errorf("%s: label filter %q: %v", name, filter, err)
	}
	n := 0
	for _, s := range specs {
		if match(s.Labels) {
			n++
		}
	}
	return Filter{Name: name, Filter: filter, Specs: n}, nil
}
