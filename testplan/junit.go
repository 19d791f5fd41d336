package testplan

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/onsi/ginkgo/v2/types"
)

// Reader of the Ginkgo JUnit report (--ginkgo.junit-report): the specs that
// ran against the cluster under test.

type junitSuites struct {
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Package    string          `xml:"package,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Status    string        `xml:"status,attr"`
	Skipped   *junitMessage `xml:"skipped"`
	Failure   *junitMessage `xml:"failure"`
	Error     *junitMessage `xml:"error"`
	// SystemErr is Ginkgo's rendered timeline of the spec, report entries
	// included.
	SystemErr string `xml:"system-err"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

// Leaf node types Ginkgo writes as "[Type]" in front of a testcase name that
// are not specs. Ginkgo v2.32.0 names testcases
// "[<LeafNodeType>] <FullText> [<label>, <label>]" (reporters/junit_report.go).
var suiteNodeTypes = map[string]bool{
	"BeforeSuite":             true,
	"SynchronizedBeforeSuite": true,
	"AfterSuite":              true,
	"SynchronizedAfterSuite":  true,
	"ReportBeforeSuite":       true,
	"ReportAfterSuite":        true,
	"DeferCleanup (Suite)":    true,
}

var leafTypePrefix = regexp.MustCompile(`^\[([A-Za-z]+(?: \([A-Za-z]+\))?)\]\s*`)

// ReadJUnit reads a JUnit XML file written by Ginkgo v2 (--ginkgo.junit-report
// or ginkgo --junit-report). If the file does not exist the error satisfies
// errors.Is(err, fs.ErrNotExist).
//
// Spec testcases become PASS / FAIL (<failure> or <error>, or a failing status
// attribute) / SKIP (<skipped>, which Ginkgo also uses for pending specs; the
// message, minus Ginkgo's "skipped - " prefix, is the reason) /
// NOT-IMPLEMENTED (a skip whose reason starts with NotImplementedPrefix; the
// rest is the reason). In a dry-run report (property DryRun) every spec is a
// SKIP with DryRunReason: Ginkgo marks them passed without running them. Suite-level
// nodes ([BeforeSuite], [AfterSuite], ...) are dropped unless they failed; a
// failed one becomes a SuiteLevel FAIL result carrying the ids of that suite
// that got no result of their own (specs Ginkgo skipped without a reason,
// and ids in the suite labels), so those ids cannot be reported as PASS.
func ReadJUnit(path string) ([]TestResult, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	suites, err := parseJUnit(data)
	if err != nil {
		return nil, fmt.Errorf("%s: malformed JUnit XML: %w", path, err)
	}
	var out []TestResult
	for _, s := range suites {
		out = append(out, junitSuiteResults(s)...)
	}
	return out, nil
}

func parseJUnit(data []byte) ([]junitSuite, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil, errors.New("no root element")
		}
		if err != nil {
			return nil, err
		}
		start, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch start.Name.Local {
		case "testsuites":
			var ss junitSuites
			if err := dec.DecodeElement(&ss, &start); err != nil {
				return nil, err
			}
			return ss.Suites, nil
		case "testsuite":
			var s junitSuite
			if err := dec.DecodeElement(&s, &start); err != nil {
				return nil, err
			}
			return []junitSuite{s}, nil
		default:
			return nil, fmt.Errorf("root element is <%s>, want <testsuites> or <testsuite>", start.Name.Local)
		}
	}
}

// junitSuiteReader turns the testcases of one <testsuite> into results.
type junitSuiteReader struct {
	name        string
	suiteLabels []string
	// labelFilter is the run's --ginkgo.label-filter; specs it left out are
	// reported skipped with no message, and the filter tells why.
	labelFilter string
	selected    types.LabelFilter
	// unresolved are ids of specs Ginkgo skipped without a reason.
	unresolved []string
	// dryRun: Ginkgo only listed the specs (--dry-run), reporting each as
	// passed although none ran.
	dryRun bool
}

// DryRunReason is the skip reason of every spec of a dry-run JUnit report.
const DryRunReason = "dry run: Ginkgo listed the spec without running it (its DryRun property is true), so it proves nothing"

func newJUnitSuiteReader(s junitSuite) *junitSuiteReader {
	r := &junitSuiteReader{
		name:        s.Name,
		suiteLabels: parseSuiteLabels(propertyValue(s.Properties, "SuiteLabels")),
		labelFilter: propertyValue(s.Properties, "LabelFilter"),
		dryRun:      propertyValue(s.Properties, "DryRun") == "true",
	}
	if r.name == "" {
		r.name = s.Package
	}
	if r.labelFilter != "" {
		r.selected, _ = types.ParseLabelFilter(r.labelFilter) // nil on error: no reason given
	}
	return r
}

func junitSuiteResults(s junitSuite) []TestResult {
	r := newJUnitSuiteReader(s)
	var specs, suiteFailures []TestResult
	for _, c := range s.Cases {
		name, nodeType := splitLeafType(c.Name)
		status, reason := junitCaseStatus(c)
		if r.dryRun {
			// Ginkgo writes status="passed" for every spec of a dry run.
			status, reason = StatusSkip, DryRunReason
		}
		if suiteNodeTypes[nodeType] || name == "" {
			if status == StatusFail {
				suiteFailures = append(suiteFailures, r.suiteFailure(nodeType, reason))
			}
			continue
		}
		specs = append(specs, r.spec(c, name, status, reason))
	}
	if len(suiteFailures) > 0 {
		// Ids that did not get a result of their own in a suite whose setup
		// or teardown failed must not end up PASS.
		blocked := appendUnique(append([]string(nil), r.unresolved...), IDsIn(strings.Join(r.suiteLabels, " "))...)
		for i := range suiteFailures {
			suiteFailures[i].IDs = blocked
		}
	}
	return append(specs, suiteFailures...)
}

// splitLeafType strips Ginkgo's "[It] " or "[BeforeSuite] " prefix.
func splitLeafType(raw string) (name, nodeType string) {
	name = strings.TrimSpace(raw)
	if m := leafTypePrefix.FindStringSubmatch(name); m != nil && (m[1] == "It" || suiteNodeTypes[m[1]]) {
		return strings.TrimSpace(name[len(m[0]):]), m[1]
	}
	return name, ""
}

func (r *junitSuiteReader) suiteFailure(nodeType, reason string) TestResult {
	if nodeType == "" {
		nodeType = "suite node"
	}
	return TestResult{Source: SourceJUnit, Suite: r.name, Name: "[" + nodeType + "]", Status: StatusFail, Reason: reason, SuiteLevel: true}
}

func (r *junitSuiteReader) spec(c junitCase, name string, status Status, reason string) TestResult {
	text, labels := splitSpecLabels(name)
	labels = appendUnique(labels, r.suiteLabels...)
	ids := IDsIn(name)
	for _, l := range r.suiteLabels {
		ids = appendUnique(ids, IDsIn(l)...)
	}
	res := TestResult{Source: SourceJUnit, Suite: r.name, Name: text, Labels: labels, Status: status, Reason: reason, IDs: ids, Reading: readingOf(c.SystemErr)}
	if status == StatusSkip && !r.dryRun && strings.HasPrefix(reason, NotImplementedPrefix) {
		res.Status, res.Reason = StatusNotImplemented, strings.TrimPrefix(reason, NotImplementedPrefix)
	}
	if status == StatusSkip && !r.dryRun && skippedWithoutReason(c) {
		if r.selected != nil && !r.selected(labels) {
			res.Reason = filteredOutReason(r.labelFilter, labels)
		} else {
			r.unresolved = appendUnique(r.unresolved, ids...)
		}
	}
	return res
}

// ReadingEntry is the name of the Ginkgo report entry in which a spec
// records which reading of an ambiguous KEP sentence the implementation took
// (framework.ExpectGateOff); the report shows it next to the spec.
const ReadingEntry = "reading"

// readingEntry matches a "reading" report entry in Ginkgo's rendered timeline
// (reporters/default_reporter.go emitReportEntry: "<name> - <location> @
// <time>", then the value, indented, on the next line).
var readingEntry = regexp.MustCompile(`(?m)^\s*` + ReadingEntry + ` - \S+ @ [^\n]*\n\s*(\S[^\n]*)$`)

// readingOf returns the distinct "reading" entries of a timeline, joined.
func readingOf(timeline string) string {
	var readings []string
	for _, m := range readingEntry.FindAllStringSubmatch(timeline, -1) {
		readings = appendUnique(readings, strings.TrimSpace(m[1]))
	}
	return strings.Join(readings, "; ")
}

// skippedWithoutReason: Ginkgo skipped the spec itself (label filter, focus,
// a failed BeforeSuite), as opposed to a Skip("why") in the spec.
func skippedWithoutReason(c junitCase) bool {
	if c.Status == "pending" {
		return false
	}
	if c.Skipped == nil {
		return true
	}
	msg := strings.TrimSpace(c.Skipped.Message)
	return msg == "" || msg == "skipped"
}

// filteredOutReason explains a spec the label filter did not select;
// Disruptive specs say how to include them (vendor mode leaves them out).
func filteredOutReason(filter string, labels []string) string {
	reason := fmt.Sprintf("not selected by the label filter %q", filter)
	for _, l := range labels {
		if l == "Disruptive" {
			reason += " (Disruptive: it restarts or reconfigures cluster components; off against an existing cluster unless ALLOW_DISRUPTIVE=1)"
			break
		}
	}
	return reason
}

// junitCaseStatus maps a testcase to PASS/FAIL/SKIP and a reason.
func junitCaseStatus(c junitCase) (Status, string) {
	switch {
	case c.Failure != nil:
		return StatusFail, failureReason(c.Failure, c.Status)
	case c.Error != nil:
		return StatusFail, failureReason(c.Error, c.Status)
	}
	switch c.Status {
	case "failed", "panicked", "interrupted", "timedout", "aborted":
		return StatusFail, c.Status
	}
	if c.Skipped != nil || c.Status == "skipped" || c.Status == "pending" {
		return StatusSkip, skipReason(c)
	}
	switch c.Status {
	case "", "passed":
		return StatusPass, ""
	default:
		return StatusFail, fmt.Sprintf("unrecognised testcase status %q", c.Status)
	}
}

func skipReason(c junitCase) string {
	msg := ""
	if c.Skipped != nil {
		msg = strings.TrimSpace(c.Skipped.Message)
	}
	switch {
	case strings.HasPrefix(msg, "skipped - "):
		return strings.TrimSpace(strings.TrimPrefix(msg, "skipped - "))
	case msg == "" && c.Status == "pending":
		return "pending"
	case msg == "":
		return "skipped"
	}
	return msg
}

// failureReason is the failure message with whitespace collapsed (Gomega
// messages span several lines: "Expected\n    <int>: 1\nto equal ...").
func failureReason(m *junitMessage, status string) string {
	for _, s := range []string{m.Message, firstLine(m.Body)} {
		if msg := truncate(s, 500); msg != "" {
			return msg
		}
	}
	if m.Type != "" {
		return m.Type
	}
	return status
}

func propertyValue(props []junitProperty, name string) string {
	for _, p := range props {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}
