package testplan

import (
	"fmt"
	"strings"
)

// Status is the outcome of a test, or the aggregated outcome of a plan item.
// Tests are only ever PASS, FAIL, SKIP or NOT-IMPLEMENTED (a spec the suite
// skipped because the implementation lacks its KEP); the other statuses are
// verdicts on plan items.
type Status string

const (
	// StatusPass: every test carrying the id passed, and (in vendor mode) at
	// least one of them ran against the cluster under test.
	StatusPass Status = "PASS"
	// StatusPartial: some tests of the id passed, others skipped.
	StatusPartial Status = "PARTIAL"
	// StatusReferenceOnly: in vendor mode, only the reference
	// implementation's unit tests prove the id; nothing checked it against
	// the cluster under test.
	StatusReferenceOnly Status = "REFERENCE-ONLY"
	// StatusSkip: every test of the id skipped.
	StatusSkip Status = "SKIP"
	// StatusNotImplemented: the prerequisite check found that the
	// implementation under test does not implement the KEP of the id's
	// specs, so they skipped with NotImplementedPrefix and a reason. Neither
	// a pass nor a failure: an implementation of one KEP alone is allowed.
	StatusNotImplemented Status = "NOT-IMPLEMENTED"
	// StatusFail: a test of the id failed (a spec, in vendor mode).
	StatusFail Status = "FAIL"
	// StatusMissing: no test carries the id.
	StatusMissing Status = "MISSING"
)

// Statuses lists every Status in report order.
var Statuses = []Status{StatusPass, StatusPartial, StatusReferenceOnly, StatusSkip, StatusNotImplemented, StatusFail, StatusMissing}

// NotImplementedPrefix starts the skip message of every spec of a KEP the
// implementation under test does not implement (framework skips them before
// they run); the JUnit reader turns such a skip into StatusNotImplemented.
const NotImplementedPrefix = "not implemented by the implementation under test: "

// ParseStatus parses a status name case-insensitively ("fail" -> StatusFail).
func ParseStatus(s string) (Status, error) {
	want := Status(strings.ToUpper(strings.TrimSpace(s)))
	var names []string
	for _, st := range Statuses {
		if st == want {
			return st, nil
		}
		names = append(names, string(st))
	}
	return "", fmt.Errorf("unknown status %q (want one of %s)", s, strings.Join(names, ", "))
}

// Source names the kind of input a TestResult came from.
type Source string

const (
	SourceJUnit  Source = "Ginkgo JUnit"
	SourceGoTest Source = "go test -json"
)

// Evidence says what a test result is evidence about.
type Evidence string

const (
	// EvidenceCluster: a Ginkgo spec that ran against the cluster under test.
	EvidenceCluster Evidence = "against the cluster under test"
	// EvidenceReference: a Go unit test of the reference implementation's
	// code; it says nothing about another implementation.
	EvidenceReference Evidence = "reference implementation only"
)

// Evidence returns what results of this source prove something about.
func (s Source) Evidence() Evidence {
	if s == SourceJUnit {
		return EvidenceCluster
	}
	return EvidenceReference
}

// TestResult is one test (a Ginkgo spec or a Go (sub)test) read from an input.
type TestResult struct {
	Source Source
	// Suite is the JUnit testsuite name or the Go package.
	Suite string
	// Name is the spec text (without the "[It]" prefix and trailing label
	// list) or the full Go test name ("TestX/D-U1_foo").
	Name string
	// Labels are the Ginkgo spec labels (spec labels followed by suite labels).
	Labels []string
	// Status is PASS, FAIL, SKIP or NOT-IMPLEMENTED.
	Status Status
	// Reason is the skip reason for SKIP and a short failure message for FAIL.
	Reason string
	// Reading is which reading of an ambiguous KEP sentence the
	// implementation took, as the spec recorded it (ReadingEntry); empty
	// where the spec records none.
	Reading string
	// Output is the full log of a failed Go test or package (empty otherwise),
	// for the people reading test-summary.
	Output string
	// IDs are the test-plan ids this result counts for.
	IDs []string
	// SuiteLevel marks a failed suite-level node (a Ginkgo [BeforeSuite],
	// [AfterSuite], ... or a Go package that failed outside of any test).
	// Its IDs are the ids of that suite that got no result of their own.
	SuiteLevel bool
}

// DisplayName is the name used as evidence in the report.
func (t TestResult) DisplayName() string {
	if t.SuiteLevel {
		return fmt.Sprintf("%s (%s)", t.Name, t.Suite)
	}
	return t.Name
}
