package testplan

import (
	"fmt"
	"sort"
	"strings"
)

// Mode says whose implementation the cluster under test runs, and so what
// the reference implementation's unit tests prove about it.
type Mode string

const (
	// ModeVendor: the cluster was given by kubeconfig and runs someone
	// else's implementation. Only specs run against it can make an id PASS;
	// ids the reference's unit tests alone prove are REFERENCE-ONLY.
	ModeVendor Mode = "vendor"
	// ModeHarness: the suite started its own local cluster running the
	// reference implementation, so the reference's unit tests are evidence
	// about the code under test; the report still tells the two kinds apart.
	ModeHarness Mode = "harness"
)

// ModeOf derives the mode from the environment record: harness only when
// the record says the suite started its own local cluster. Without a record
// nothing says which implementation ran, so the strict vendor mode applies.
func ModeOf(env *Environment) Mode {
	if env != nil && env.Cluster == "local" {
		return ModeHarness
	}
	return ModeVendor
}

// Options steer Aggregate.
type Options struct {
	Mode Mode
	// ReferenceNotRead explains why no unit tests of the reference were
	// read ("" when they were). Unit-level items nothing else covers are
	// then SKIP with this reason instead of MISSING.
	ReferenceNotRead string
}

// Result is the aggregated outcome of one plan item.
type Result struct {
	Item   Item
	Status Status
	// Reason explains Status when no test does (unit tests not read).
	Reason string
	// Allowed is the user's reason for letting this id not pass (Allow).
	Allowed string
	// Cluster are the specs carrying the id, run against the cluster under
	// test; Reference are the reference implementation's unit tests. Both
	// are ordered failures first, then skips, then passes.
	Cluster   []TestResult
	Reference []TestResult
}

// Tests returns every test naming the item, cluster evidence first.
func (r Result) Tests() []TestResult {
	return append(append([]TestResult(nil), r.Cluster...), r.Reference...)
}

// UnknownID is an id named by tests that the plan does not contain.
type UnknownID struct {
	ID    string
	Tests []TestResult
}

// Report is the coverage of a plan by a set of test results.
type Report struct {
	Plan *Plan
	Mode Mode
	// Inputs describes the input files; set by the caller (see ReadInputs).
	Inputs []Input
	// Environment is what the suite saw of the cluster (environment.json);
	// nil when not recorded.
	Environment *Environment
	// Results has one entry per plan item, in plan order.
	Results []Result
	// Unknown lists ids found in tests but not in the plan, sorted.
	Unknown []UnknownID
	// SuiteFailures are the failed suite-level nodes / packages.
	SuiteFailures []TestResult
}

// Order of tests within an item's evidence: what decides a bad verdict first.
var testRank = map[Status]int{StatusFail: 0, StatusNotImplemented: 1, StatusSkip: 1, StatusPass: 2}

// Aggregate computes the status of every plan item from the tests naming
// its id. Per kind of evidence, any failure is FAIL, all passed is PASS,
// passes and skips are PARTIAL and all skipped is SKIP. In harness mode both
// kinds are combined that way. In vendor mode the specs decide; where they
// decide nothing (skipped or none), unit tests of the reference that all
// passed make the item REFERENCE-ONLY, never PASS.
func Aggregate(plan *Plan, results []TestResult, opts Options) *Report {
	if opts.Mode == "" {
		opts.Mode = ModeVendor
	}
	rep := &Report{Plan: plan, Mode: opts.Mode}
	byID := map[string][]TestResult{}
	for _, t := range results {
		if t.SuiteLevel {
			rep.SuiteFailures = append(rep.SuiteFailures, t)
		}
		if _, ok := testRank[t.Status]; !ok {
			continue
		}
		for _, id := range t.IDs {
			byID[id] = append(byID[id], t)
		}
	}
	inPlan := map[string]bool{}
	for _, it := range plan.Items {
		inPlan[it.ID] = true
		rep.Results = append(rep.Results, decide(it, byID[it.ID], opts))
	}
	for id, tests := range byID {
		if !inPlan[id] {
			rep.Unknown = append(rep.Unknown, UnknownID{ID: id, Tests: tests})
		}
	}
	sort.Slice(rep.Unknown, func(i, j int) bool { return rep.Unknown[i].ID < rep.Unknown[j].ID })
	return rep
}

func decide(it Item, tests []TestResult, opts Options) Result {
	res := Result{Item: it}
	sorted := append([]TestResult(nil), tests...)
	sort.SliceStable(sorted, func(i, j int) bool { return testRank[sorted[i].Status] < testRank[sorted[j].Status] })
	for _, t := range sorted {
		if t.Source.Evidence() == EvidenceCluster {
			res.Cluster = append(res.Cluster, t)
		} else {
			res.Reference = append(res.Reference, t)
		}
	}
	res.Status = verdict(combine(res.Cluster), combine(res.Reference), opts.Mode)
	if res.Status == "" {
		res.Status = StatusMissing
		if it.Level == LevelUnit && opts.ReferenceNotRead != "" {
			res.Status = StatusSkip
			res.Reason = "unit-level item, proved by the reference implementation's unit tests, which were not read: " + opts.ReferenceNotRead
		}
	}
	return res
}

// combine is the status of one kind of evidence: "" when there is none.
func combine(tests []TestResult) Status {
	var st Status
	for _, t := range tests {
		st = merge(st, t.Status)
	}
	return st
}

// merge combines two statuses of evidence ("" is no evidence).
func merge(a, b Status) Status {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	case a == StatusFail || b == StatusFail:
		return StatusFail
	case a == b:
		return a
	case notRun(a) && notRun(b):
		// Nothing ran, and some specs were not run because their KEP is
		// not implemented: that, not a plain skip, is the id's state.
		return StatusNotImplemented
	}
	return StatusPartial // a pass and a skip, in some form
}

// notRun: a status of evidence where no test ran to the end.
func notRun(s Status) bool {
	return s == StatusSkip || s == StatusNotImplemented
}

func verdict(cluster, reference Status, mode Mode) Status {
	if mode == ModeHarness {
		return merge(cluster, reference)
	}
	switch {
	case cluster == StatusFail, cluster == StatusPass, cluster == StatusPartial, cluster == StatusNotImplemented:
		// NOT-IMPLEMENTED too: the reference's unit tests say nothing of
		// an implementation that lacks the KEP.
		return cluster
	case reference == StatusPass:
		return StatusReferenceOnly
	}
	return cluster
}

// Reasons returns why the item is not PASS: the failure messages of a FAIL,
// the skip (and not-implemented) reasons of a PARTIAL, SKIP or
// NOT-IMPLEMENTED, and the item's own Reason.
func (r Result) Reasons() []string {
	var out []string
	want := notRun
	if r.Status == StatusFail {
		want = func(s Status) bool { return s == StatusFail }
	}
	if r.Status != StatusPass {
		for _, t := range r.Tests() {
			if want(t.Status) && t.Reason != "" {
				out = appendUnique(out, t.Reason)
			}
		}
	}
	if r.Reason != "" {
		out = appendUnique(out, r.Reason)
	}
	if r.Allowed != "" {
		out = appendUnique(out, "allowed not to pass (ALLOW_SKIP): "+r.Allowed)
	}
	return out
}

// Counts returns the number of plan items per status (every status present).
func (r *Report) Counts() map[Status]int {
	return countStatuses(r.Results)
}

func countStatuses(results []Result) map[Status]int {
	c := map[Status]int{}
	for _, st := range Statuses {
		c[st] = 0
	}
	for _, res := range results {
		c[res.Status]++
	}
	return c
}

// Get returns the aggregated result of a plan id.
func (r *Report) Get(id string) (Result, bool) {
	for _, res := range r.Results {
		if res.Item.ID == id {
			return res, true
		}
	}
	return Result{}, false
}

// SummaryLine returns "PASS n, PARTIAL n, REFERENCE-ONLY n, SKIP n,
// NOT-IMPLEMENTED n, FAIL n, MISSING n of N": every status counted on its own.
func (r *Report) SummaryLine() string {
	return summary(r.Results)
}

func summary(results []Result) string {
	c := countStatuses(results)
	parts := make([]string, len(Statuses))
	for i, st := range Statuses {
		parts[i] = fmt.Sprintf("%s %d", st, c[st])
	}
	return strings.Join(parts, ", ") + fmt.Sprintf(" of %d", len(results))
}

// ResultsOf returns the results of one KEP, in plan order.
func (r *Report) ResultsOf(kep string) []Result {
	var rows []Result
	for _, res := range r.Results {
		if res.Item.KEP == kep {
			rows = append(rows, res)
		}
	}
	return rows
}

// KEPs returns the KEPs of the plan, in plan order.
func (r *Report) KEPs() []string {
	if r.Plan == nil {
		return nil
	}
	return r.Plan.KEPs()
}

// ModeSentence says in one sentence what the mode means for the verdicts.
func (r *Report) ModeSentence() string {
	if r.Mode == ModeHarness {
		return "harness: the suite started its own cluster running the reference implementation, so the reference's unit tests count as evidence too; each row still shows which evidence ran against the cluster under test."
	}
	return "vendor: only specs run against the cluster under test can make an id PASS; ids only the reference implementation's unit tests prove are REFERENCE-ONLY."
}
