package testplan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/onsi/ginkgo/v2/types"
)

// Status is the outcome of a test, or the aggregated outcome of a plan item.
type Status string

const (
	StatusPass    Status = "PASS"
	StatusFail    Status = "FAIL"
	StatusSkip    Status = "SKIP"
	StatusMissing Status = "MISSING"
)

// Statuses lists every Status in report order.
var Statuses = []Status{StatusPass, StatusFail, StatusSkip, StatusMissing}

// ParseStatus parses a status name case-insensitively ("fail" -> StatusFail).
func ParseStatus(s string) (Status, error) {
	want := Status(strings.ToUpper(strings.TrimSpace(s)))
	for _, st := range Statuses {
		if st == want {
			return st, nil
		}
	}
	return "", fmt.Errorf("unknown status %q (want one of PASS, FAIL, SKIP, MISSING)", s)
}

// Source names the kind of input a TestResult came from.
type Source string

const (
	SourceJUnit  Source = "Ginkgo JUnit"
	SourceGoTest Source = "go test -json"
)

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
	// Status is PASS, FAIL or SKIP.
	Status Status
	// Reason is the skip reason for SKIP and a short failure message for FAIL.
	Reason string
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

// Input describes one input file of the report.
type Input struct {
	Source Source
	Path   string
	// Found is false when the file does not exist (or no path was given);
	// such an input contributes nothing.
	Found bool
	// Tests is the number of results read from the file.
	Tests int
}

// ReadInputs reads the Ginkgo JUnit file and the go test -json file. A path
// that is empty or names a file that does not exist is recorded as not found
// and contributes nothing; a file that exists but cannot be parsed is an
// error naming the file.
func ReadInputs(junitPath, goTestJSONPath string) ([]TestResult, []Input, error) {
	var all []TestResult
	var inputs []Input
	for _, in := range []struct {
		src  Source
		path string
		read func(string) ([]TestResult, error)
	}{
		{SourceJUnit, junitPath, ReadJUnit},
		{SourceGoTest, goTestJSONPath, ReadGoTestJSON},
	} {
		input := Input{Source: in.src, Path: in.path}
		if in.path != "" {
			res, err := in.read(in.path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				// Missing input: reported in the header, contributes nothing.
			case err != nil:
				return nil, nil, err
			default:
				input.Found = true
				input.Tests = len(res)
				all = append(all, res...)
			}
		}
		inputs = append(inputs, input)
	}
	return all, inputs, nil
}

// UnitTestsNotRun returns a SKIP result for every unit-level plan item when
// the go test -json input was not found (a vendor run against an existing
// cluster, a Sonobuoy plugin): those items are proved by Go tests of the
// reference implementation's code, which did not run, so the report says so
// instead of calling them MISSING. An e2e spec naming the same id still wins.
func UnitTestsNotRun(plan *Plan, inputs []Input) []TestResult {
	for _, in := range inputs {
		if in.Source == SourceGoTest && in.Found {
			return nil
		}
	}
	var out []TestResult
	for _, it := range plan.Items {
		if it.Level != LevelUnit {
			continue
		}
		out = append(out, TestResult{Source: SourceGoTest, Name: "go test (not run)", Status: StatusSkip, IDs: []string{it.ID},
			Reason: "unit-level item, proved by the Go tests of the reference implementation; no go test -json input was given (make test writes unit.json)"})
	}
	return out
}

// ---------------------------------------------------------------------------
// Ginkgo JUnit

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
// message, minus Ginkgo's "skipped - " prefix, is the reason). Suite-level
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

func junitSuiteResults(s junitSuite) []TestResult {
	suiteName := s.Name
	if suiteName == "" {
		suiteName = s.Package
	}
	suiteLabels := parseSuiteLabels(propertyValue(s.Properties, "SuiteLabels"))
	// Specs the run's label filter left out are reported skipped with no
	// message; the filter (a suite property) tells why.
	labelFilter := propertyValue(s.Properties, "LabelFilter")
	var selected types.LabelFilter
	if labelFilter != "" {
		selected, _ = types.ParseLabelFilter(labelFilter) // nil on error: no reason given
	}

	var specs, suiteFailures []TestResult
	var unresolved []string // ids of specs Ginkgo skipped without a reason
	for _, c := range s.Cases {
		name := strings.TrimSpace(c.Name)
		nodeType := ""
		if m := leafTypePrefix.FindStringSubmatch(name); m != nil && (m[1] == "It" || suiteNodeTypes[m[1]]) {
			nodeType = m[1]
			name = strings.TrimSpace(name[len(m[0]):])
		}
		status, reason := junitCaseStatus(c)
		if suiteNodeTypes[nodeType] || name == "" {
			if nodeType == "" {
				nodeType = "suite node"
			}
			if status == StatusFail {
				suiteFailures = append(suiteFailures, TestResult{
					Source:     SourceJUnit,
					Suite:      suiteName,
					Name:       "[" + nodeType + "]",
					Status:     StatusFail,
					Reason:     reason,
					SuiteLevel: true,
				})
			}
			continue
		}
		text, labels := splitSpecLabels(name)
		labels = appendUnique(labels, suiteLabels...)
		ids := IDsIn(name)
		for _, l := range suiteLabels {
			ids = appendUnique(ids, IDsIn(l)...)
		}
		r := TestResult{
			Source: SourceJUnit,
			Suite:  suiteName,
			Name:   text,
			Labels: labels,
			Status: status,
			Reason: reason,
			IDs:    ids,
		}
		if status == StatusSkip && (c.Skipped == nil || strings.TrimSpace(c.Skipped.Message) == "skipped" || strings.TrimSpace(c.Skipped.Message) == "") && c.Status != "pending" {
			if selected != nil && !selected(labels) {
				r.Reason = filteredOutReason(labelFilter, labels)
			} else {
				unresolved = appendUnique(unresolved, ids...)
			}
		}
		specs = append(specs, r)
	}
	if len(suiteFailures) > 0 {
		// Ids that did not get a result of their own in a suite whose setup
		// or teardown failed must not end up PASS.
		blocked := appendUnique(append([]string(nil), unresolved...), IDsIn(strings.Join(suiteLabels, " "))...)
		for i := range suiteFailures {
			suiteFailures[i].IDs = blocked
		}
	}
	return append(specs, suiteFailures...)
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
		msg := ""
		if c.Skipped != nil {
			msg = strings.TrimSpace(c.Skipped.Message)
		}
		switch {
		case strings.HasPrefix(msg, "skipped - "):
			msg = strings.TrimSpace(strings.TrimPrefix(msg, "skipped - "))
		case msg == "" && c.Status == "pending":
			msg = "pending"
		case msg == "":
			msg = "skipped"
		}
		return StatusSkip, msg
	}
	switch c.Status {
	case "", "passed":
		return StatusPass, ""
	default:
		return StatusFail, fmt.Sprintf("unrecognised testcase status %q", c.Status)
	}
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

// parseSuiteLabels parses Ginkgo's SuiteLabels property, written as
// "[label1,label2]" (comma, no space; "[]" when there are none).
func parseSuiteLabels(v string) []string {
	v = strings.TrimSpace(v)
	v = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	return splitLabelList(v)
}

func splitLabelList(v string) []string {
	var out []string
	for _, l := range strings.Split(v, ",") {
		if l = strings.TrimSpace(l); l != "" {
			out = appendUnique(out, l)
		}
	}
	return out
}

// splitSpecLabels splits "<full text> [l1, l2] [semver...]" into the spec
// text and its labels. Ginkgo appends the labels as " [" + join(labels, ", ")
// + "]", then (if any) the semantic-version constraints and the component
// constraints as further bracket groups. Label names cannot contain
// "&|!,()/" so a group of comma-separated words is taken as the label list;
// groups that look like version constraints are dropped from the text too.
func splitSpecLabels(name string) (string, []string) {
	text := name
	// Up to two trailing constraint groups (semver, component semver).
	for i := 0; i < 2; i++ {
		g, rest, ok := trailingGroup(text)
		if !ok || !looksLikeConstraintGroup(g) {
			break
		}
		text = rest
	}
	if g, rest, ok := trailingGroup(text); ok && looksLikeLabelGroup(g) {
		return rest, splitLabelList(g)
	}
	return text, nil
}

// trailingGroup splits "text [group]" into "group" and "text".
func trailingGroup(s string) (group, rest string, ok bool) {
	t := strings.TrimRight(s, " ")
	if !strings.HasSuffix(t, "]") {
		return "", s, false
	}
	open := matchingOpen(t)
	if open <= 0 || t[open-1] != ' ' {
		return "", s, false
	}
	return t[open+1 : len(t)-1], strings.TrimRight(t[:open], " "), true
}

func matchingOpen(s string) int {
	depth := 0
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case ']':
			depth++
		case '[':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

var constraintRE = regexp.MustCompile(`^\s*(?:[A-Za-z0-9_.-]+:\s*\[.*\]|[<>=!~^]*\s*v?[0-9][^,]*)\s*$`)

func looksLikeLabelGroup(g string) bool {
	if strings.TrimSpace(g) == "" || strings.ContainsAny(g, "[]&|!()/") {
		return false
	}
	for _, l := range strings.Split(g, ", ") {
		if strings.TrimSpace(l) == "" || constraintRE.MatchString(l) {
			return false
		}
	}
	return true
}

func looksLikeConstraintGroup(g string) bool {
	for _, c := range strings.Split(g, ", ") {
		if !constraintRE.MatchString(c) {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// go test -json

type testEvent struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string
	FailedBuild string
}

type runningTest struct {
	pkg, name string
	output    []string
}

// ReadGoTestJSON reads a `go test -json` stream (one JSON event per line).
// Every (sub)test that finished with pass/fail/skip becomes a result counting
// for the ids in its own full name ("TestX/D-U1_foo" counts for D-U1; its
// parent "TestX" counts for nothing). The reason of a skip is the last
// message the test logged before "--- SKIP" (normally the t.Skip message,
// with its "file_test.go:12:" prefix). Tests that started but never finished
// are FAIL, and a package that failed outside any test (build failure,
// TestMain, panic, timeout) yields a SuiteLevel FAIL result. If the file does
// not exist the error satisfies errors.Is(err, fs.ErrNotExist).
func ReadGoTestJSON(path string) ([]TestResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res, err := parseGoTestJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: malformed go test -json stream: %w", path, err)
	}
	return res, nil
}

func parseGoTestJSON(r io.Reader) ([]TestResult, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)

	var out []TestResult
	running := map[string]*runningTest{}
	var order []string // keys of running tests in start order
	pkgOutput := map[string][]string{}
	pkgFailed := map[string]string{} // package -> FailedBuild (may be empty)
	var pkgOrder []string
	pkgHasFailingTest := map[string]bool{}

	key := func(pkg, test string) string { return pkg + "\x00" + test }
	get := func(pkg, test string) *runningTest {
		k := key(pkg, test)
		t := running[k]
		if t == nil {
			t = &runningTest{pkg: pkg, name: test}
			running[k] = t
			order = append(order, k)
		}
		return t
	}

	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var ev testEvent
		if raw[0] != '{' {
			return nil, fmt.Errorf("line %d is not a JSON event: %.80q", line, raw)
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		if ev.Action == "" {
			return nil, fmt.Errorf("line %d: event has no Action", line)
		}
		pkg := ev.Package
		if pkg == "" {
			pkg = ev.ImportPath
		}
		if ev.Test == "" {
			switch ev.Action {
			case "output", "build-output":
				// build-output is keyed by ImportPath ("pkg [pkg.test]"),
				// which the package's fail event names in FailedBuild.
				pkgOutput[pkg] = append(pkgOutput[pkg], strings.TrimRight(ev.Output, "\n"))
			case "fail":
				if _, seen := pkgFailed[pkg]; !seen {
					pkgOrder = append(pkgOrder, pkg)
				}
				if ev.FailedBuild != "" {
					pkgFailed[pkg] = buildFailure(pkgOutput[ev.FailedBuild])
				} else if _, seen := pkgFailed[pkg]; !seen {
					pkgFailed[pkg] = ""
				}
			}
			continue
		}
		switch ev.Action {
		case "run":
			get(pkg, ev.Test)
		case "output":
			t := get(pkg, ev.Test)
			t.output = append(t.output, strings.TrimRight(ev.Output, "\n"))
		case "pass", "fail", "skip":
			t := get(pkg, ev.Test)
			delete(running, key(pkg, ev.Test))
			st := map[string]Status{"pass": StatusPass, "fail": StatusFail, "skip": StatusSkip}[ev.Action]
			reason := ""
			switch st {
			case StatusSkip:
				reason = lastLogEntry(t.output)
				if reason == "" {
					reason = "(no reason given)"
				}
			case StatusFail:
				reason = firstLogEntry(t.output)
				pkgHasFailingTest[pkg] = true
			}
			out = append(out, TestResult{
				Source: SourceGoTest,
				Suite:  pkg,
				Name:   ev.Test,
				Status: st,
				Reason: reason,
				IDs:    IDsIn(ev.Test),
			})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}

	// Tests that started but never reported a result (panic, timeout,
	// truncated stream) did not pass.
	for _, k := range order {
		t := running[k]
		if t == nil {
			continue
		}
		reason := "started but no result recorded"
		if why, failed := pkgFailed[t.pkg]; failed {
			if why == "" {
				why = packageFailure(pkgOutput[t.pkg])
			}
			reason += " (package failed: " + why + ")"
		}
		pkgHasFailingTest[t.pkg] = true
		out = append(out, TestResult{
			Source: SourceGoTest,
			Suite:  t.pkg,
			Name:   t.name,
			Status: StatusFail,
			Reason: reason,
			IDs:    IDsIn(t.name),
		})
	}
	// Packages that failed without any failing test: build failures,
	// TestMain failures and the like.
	for _, pkg := range pkgOrder {
		if pkgHasFailingTest[pkg] {
			continue
		}
		why := pkgFailed[pkg]
		if why == "" {
			why = packageFailure(pkgOutput[pkg])
		}
		out = append(out, TestResult{
			Source:     SourceGoTest,
			Suite:      pkg,
			Name:       "package",
			Status:     StatusFail,
			Reason:     why,
			SuiteLevel: true,
		})
	}
	return out, nil
}

var (
	logEntryStart = regexp.MustCompile(`^\s*[\w.+-]+\.go:\d+: ?`)
	testMarker    = regexp.MustCompile(`^\s*(?:=== (?:RUN|PAUSE|CONT|NAME)\b|--- (?:PASS|FAIL|SKIP|BENCH):)`)
)

// logEntries groups a test's output into log entries: a line starting with
// "file.go:N:" (or any unindented line) starts an entry, more deeply indented
// lines continue it. Go's own === / --- marker lines are dropped.
func logEntries(lines []string) []string {
	var entries []string
	indent := -1
	for _, l := range lines {
		if testMarker.MatchString(l) || strings.TrimSpace(l) == "" {
			continue
		}
		ind := len(l) - len(strings.TrimLeft(l, " \t"))
		if len(entries) > 0 && ind > indent && !logEntryStart.MatchString(l) {
			entries[len(entries)-1] += " " + strings.TrimSpace(l)
			continue
		}
		entries = append(entries, strings.TrimSpace(l))
		indent = ind
	}
	return entries
}

func lastLogEntry(lines []string) string {
	e := logEntries(lines)
	if len(e) == 0 {
		return ""
	}
	return e[len(e)-1]
}

func firstLogEntry(lines []string) string {
	e := logEntries(lines)
	if len(e) == 0 {
		return ""
	}
	return e[0]
}

func buildFailure(lines []string) string {
	for _, l := range lines {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			return "build failed: " + t
		}
	}
	return "build failed"
}

func packageFailure(lines []string) string {
	for _, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "panic:"), strings.Contains(t, "test timed out"),
			strings.Contains(t, "[build failed]"), strings.Contains(t, "[setup failed]"):
			return t
		}
	}
	for i := len(lines) - 1; i >= 0; i-- {
		t := strings.TrimSpace(lines[i])
		if t != "" && t != "FAIL" && !strings.HasPrefix(t, "FAIL\t") {
			return t
		}
	}
	return "package failed outside of any test"
}

// ---------------------------------------------------------------------------
// Aggregation

// Result is the aggregated outcome of one plan item.
type Result struct {
	Item   Item
	Status Status
	// Tests are all results naming the item's id, those that decided Status
	// first.
	Tests []TestResult
}

// Decisive returns the tests whose status equals the aggregated status.
func (r Result) Decisive() []TestResult {
	var out []TestResult
	for _, t := range r.Tests {
		if t.Status == r.Status {
			out = append(out, t)
		}
	}
	return out
}

// UnknownID is an id named by tests that the plan does not contain.
type UnknownID struct {
	ID    string
	Tests []TestResult
}

// Report is the coverage of a plan by a set of test results.
type Report struct {
	Plan *Plan
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

var statusRank = map[Status]int{StatusFail: 0, StatusPass: 1, StatusSkip: 2}

// Aggregate computes the status of every plan item from all results naming
// its id: any FAIL -> FAIL; else any PASS -> PASS; else any SKIP -> SKIP;
// else MISSING.
func Aggregate(plan *Plan, results []TestResult) *Report {
	rep := &Report{Plan: plan}
	byID := map[string][]TestResult{}
	for _, t := range results {
		if t.SuiteLevel {
			rep.SuiteFailures = append(rep.SuiteFailures, t)
		}
		if _, ok := statusRank[t.Status]; !ok {
			continue
		}
		for _, id := range t.IDs {
			byID[id] = append(byID[id], t)
		}
	}
	inPlan := map[string]bool{}
	for _, it := range plan.Items {
		inPlan[it.ID] = true
		tests := append([]TestResult(nil), byID[it.ID]...)
		sort.SliceStable(tests, func(i, j int) bool {
			return statusRank[tests[i].Status] < statusRank[tests[j].Status]
		})
		st := StatusMissing
		if len(tests) > 0 {
			st = tests[0].Status
		}
		rep.Results = append(rep.Results, Result{Item: it, Status: st, Tests: tests})
	}
	for id, tests := range byID {
		if !inPlan[id] {
			rep.Unknown = append(rep.Unknown, UnknownID{ID: id, Tests: tests})
		}
	}
	sort.Slice(rep.Unknown, func(i, j int) bool { return rep.Unknown[i].ID < rep.Unknown[j].ID })
	return rep
}

// Counts returns the number of plan items per status (every status present).
func (r *Report) Counts() map[Status]int {
	c := map[Status]int{}
	for _, st := range Statuses {
		c[st] = 0
	}
	for _, res := range r.Results {
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

// SummaryLine returns "PASS n, FAIL n, SKIP n, MISSING n of N".
func (r *Report) SummaryLine() string {
	return summary(r.Results, len(r.Results))
}

func summary(results []Result, total int) string {
	c := map[Status]int{}
	for _, res := range results {
		c[res.Status]++
	}
	return fmt.Sprintf("PASS %d, FAIL %d, SKIP %d, MISSING %d of %d",
		c[StatusPass], c[StatusFail], c[StatusSkip], c[StatusMissing], total)
}

// ---------------------------------------------------------------------------
// Markdown

const (
	maxEvidenceTests = 3
	maxNameLen       = 400 // the full spec text: it is the evidence
	maxReasonLen     = 300
)

// WriteMarkdown writes the report as markdown.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	var keps []string
	if r.Plan != nil {
		keps = r.Plan.KEPs()
	}
	title := "Conformance report"
	if len(keps) > 0 {
		title += ": " + strings.Join(keps, ", ")
	}
	fmt.Fprintf(&b, "# %s\n\n", title)
	fmt.Fprintf(&b, "**%s**\n\n", r.SummaryLine())
	writeEnvironmentMarkdown(&b, r.Environment)

	b.WriteString("## Inputs\n\n")
	if len(r.Inputs) == 0 {
		b.WriteString("- (not recorded)\n")
	}
	for _, in := range r.Inputs {
		switch {
		case in.Path == "":
			fmt.Fprintf(&b, "- %s: **not given**; contributes nothing\n", in.Source)
		case !in.Found:
			fmt.Fprintf(&b, "- %s: %s: **file not found**; contributes nothing\n", in.Source, cell(in.Path))
		default:
			fmt.Fprintf(&b, "- %s: %s (%s)\n", in.Source, cell(in.Path), plural(in.Tests, "test result"))
		}
	}
	if r.Environment != nil && r.Environment.Cluster == "existing" {
		b.WriteString("\nThe e2e specs ran against the cluster above. Ids whose evidence is a Go test (`TestX/...`, from go test -json) are proved by the reference implementation's unit tests, not by the cluster under test.\n")
	}
	b.WriteString("\n")

	if len(r.SuiteFailures) > 0 {
		b.WriteString("## Suite-level failures\n\n")
		b.WriteString("Ids of these suites that got no result of their own are reported as FAIL, never PASS.\n\n")
		for _, f := range r.SuiteFailures {
			fmt.Fprintf(&b, "- %s, %s: %s", f.Source, cell(f.DisplayName()), cell(truncate(f.Reason, maxReasonLen)))
			if len(f.IDs) > 0 {
				fmt.Fprintf(&b, " (FAIL for %s)", strings.Join(f.IDs, ", "))
			} else {
				b.WriteString(" (no test of this suite/package reported a result, so the ids it covers cannot be identified: they stay MISSING unless another test names them)")
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}

	for _, kep := range keps {
		var rows []Result
		for _, res := range r.Results {
			if res.Item.KEP == kep {
				rows = append(rows, res)
			}
		}
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", kep, summary(rows, len(rows)))
		b.WriteString("| id | level | result | evidence | item |\n")
		b.WriteString("|---|---|---|---|---|\n")
		for _, res := range rows {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n",
				res.Item.ID, res.Item.Level, res.Status, evidenceCell(res), cell(res.Item.Text))
		}
		b.WriteString("\n")
	}

	b.WriteString("## Unknown ids\n\n")
	if len(r.Unknown) == 0 {
		b.WriteString("None: every id named by a test is in the plan.\n")
	} else {
		b.WriteString("Ids named by tests but not in the plan (likely typos):\n\n")
		b.WriteString("| id | tests |\n|---|---|\n")
		for _, u := range r.Unknown {
			fmt.Fprintf(&b, "| %s | %s |\n", cell(u.ID), testList(u.Tests, true))
		}
	}

	_, err := io.WriteString(w, b.String())
	return err
}

func evidenceCell(res Result) string {
	if len(res.Tests) == 0 {
		return "none"
	}
	out := testList(res.Tests, false)
	var reasons []string
	if res.Status == StatusSkip || res.Status == StatusFail {
		for _, t := range res.Decisive() {
			if t.Reason != "" {
				reasons = appendUnique(reasons, truncate(t.Reason, maxReasonLen))
			}
		}
	}
	if len(reasons) > 0 {
		label := "reason"
		if res.Status == StatusFail {
			label = "failure"
		}
		if len(reasons) > 2 {
			reasons = append(reasons[:2], fmt.Sprintf("… (+%d more)", len(reasons)-2))
		}
		out += "<br>" + label + ": " + cell(strings.Join(reasons, "; "))
	}
	return out
}

// testList renders up to maxEvidenceTests test names; tests whose status is
// not the first (deciding) one are annotated with their own status.
func testList(tests []TestResult, annotateAll bool) string {
	var names []string
	seen := map[string]bool{}
	for _, t := range tests {
		n := truncate(t.DisplayName(), maxNameLen)
		if annotateAll || t.Status != tests[0].Status {
			n += " (" + string(t.Status) + ")"
		}
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	extra := 0
	if len(names) > maxEvidenceTests {
		extra = len(names) - maxEvidenceTests
		names = names[:maxEvidenceTests]
	}
	s := cell(strings.Join(names, "; "))
	if extra > 0 {
		s += fmt.Sprintf("; … (+%d more)", extra)
	}
	return s
}

var cellEscaper = strings.NewReplacer(
	"&", "&amp;", "<", "&lt;", ">", "&gt;", "|", `\|`,
	"\r\n", " ", "\n", " ", "\r", " ",
)

// cell makes s safe inside a markdown table cell.
func cell(s string) string {
	return cellEscaper.Replace(s)
}

func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

func appendUnique(dst []string, items ...string) []string {
	for _, it := range items {
		found := false
		for _, d := range dst {
			if d == it {
				found = true
				break
			}
		}
		if !found {
			dst = append(dst, it)
		}
	}
	return dst
}
