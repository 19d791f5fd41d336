package testplan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// Reader of a `go test -json` stream (make test's unit.json): the unit tests
// of the reference implementation. cmd/was-harness test-summary reads it
// through here too.

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
// for the ids in its name ("TestX/D-U1_compiles" counts for D-U1; its
// parent "TestX" counts for nothing). The reason of a skip is the last
// message the test logged before "--- SKIP" (normally the t.Skip message,
// with its "file_test.go:12:" prefix). Tests that started but never finished
// are FAIL, and a package that failed outside any test (build failure,
// TestMain, panic, timeout) yields a SuiteLevel FAIL result. Failed results
// carry their full log in Output. If the file does not exist the error
// satisfies errors.Is(err, fs.ErrNotExist).
func ReadGoTestJSON(path string) ([]TestResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res, err := ParseGoTestJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: malformed go test -json stream: %w", path, err)
	}
	return res, nil
}

// ParseGoTestJSON is ReadGoTestJSON on a stream.
func ParseGoTestJSON(r io.Reader) ([]TestResult, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	p := newGoTestParser()
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		ev, err := decodeTestEvent(raw)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		p.event(ev)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	return p.finish(), nil
}

func decodeTestEvent(raw []byte) (testEvent, error) {
	var ev testEvent
	if raw[0] != '{' {
		return ev, fmt.Errorf("not a JSON event: %.80q", raw)
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		return ev, err
	}
	if ev.Action == "" {
		return ev, fmt.Errorf("event has no Action")
	}
	if ev.Package == "" {
		ev.Package = ev.ImportPath
	}
	return ev, nil
}

// goTestParser accumulates the events of one stream.
type goTestParser struct {
	out     []TestResult
	running map[string]*runningTest
	order   []string // keys of running tests in start order
	// pkgOutput is output outside any test, by package (and by the build's
	// ImportPath "pkg [pkg.test]" for build-output).
	pkgOutput map[string][]string
	// pkgFailed: package -> why it failed (a build failure; empty until known).
	pkgFailed         map[string]string
	pkgOrder          []string
	pkgHasFailingTest map[string]bool
}

func newGoTestParser() *goTestParser {
	return &goTestParser{
		running:           map[string]*runningTest{},
		pkgOutput:         map[string][]string{},
		pkgFailed:         map[string]string{},
		pkgHasFailingTest: map[string]bool{},
	}
}

func testKey(pkg, test string) string { return pkg + "\x00" + test }

func (p *goTestParser) get(pkg, test string) *runningTest {
	k := testKey(pkg, test)
	t := p.running[k]
	if t == nil {
		t = &runningTest{pkg: pkg, name: test}
		p.running[k] = t
		p.order = append(p.order, k)
	}
	return t
}

func (p *goTestParser) event(ev testEvent) {
	if ev.Test == "" {
		p.packageEvent(ev)
		return
	}
	switch ev.Action {
	case "run":
		p.get(ev.Package, ev.Test)
	case "output":
		t := p.get(ev.Package, ev.Test)
		t.output = append(t.output, strings.TrimRight(ev.Output, "\n"))
	case "pass", "fail", "skip":
		t := p.get(ev.Package, ev.Test)
		delete(p.running, testKey(ev.Package, ev.Test))
		p.out = append(p.out, p.finished(t, ev.Action))
	}
}

func (p *goTestParser) packageEvent(ev testEvent) {
	pkg := ev.Package
	switch ev.Action {
	case "output", "build-output":
		// build-output is keyed by ImportPath ("pkg [pkg.test]"), which the
		// package's fail event names in FailedBuild.
		p.pkgOutput[pkg] = append(p.pkgOutput[pkg], strings.TrimRight(ev.Output, "\n"))
	case "fail":
		if _, seen := p.pkgFailed[pkg]; !seen {
			p.pkgOrder = append(p.pkgOrder, pkg)
		}
		if ev.FailedBuild != "" {
			p.pkgFailed[pkg] = buildFailure(p.pkgOutput[ev.FailedBuild])
			p.pkgOutput[pkg] = append(p.pkgOutput[pkg], p.pkgOutput[ev.FailedBuild]...)
		} else if _, seen := p.pkgFailed[pkg]; !seen {
			p.pkgFailed[pkg] = ""
		}
	}
}

func (p *goTestParser) finished(t *runningTest, action string) TestResult {
	r := TestResult{Source: SourceGoTest, Suite: t.pkg, Name: t.name, IDs: IDsIn(t.name)}
	switch action {
	case "pass":
		r.Status = StatusPass
	case "skip":
		r.Status = StatusSkip
		if r.Reason = lastLogEntry(t.output); r.Reason == "" {
			r.Reason = "(no reason given)"
		}
	case "fail":
		r.Status = StatusFail
		r.Reason = firstLogEntry(t.output)
		r.Output = strings.Join(t.output, "\n")
		p.pkgHasFailingTest[t.pkg] = true
	}
	return r
}

// finish adds what the stream left unfinished and returns every result.
func (p *goTestParser) finish() []TestResult {
	// Tests that started but never reported a result (panic, timeout,
	// truncated stream) did not pass.
	for _, k := range p.order {
		t := p.running[k]
		if t == nil {
			continue
		}
		reason := "started but no result recorded"
		if _, failed := p.pkgFailed[t.pkg]; failed {
			reason += " (package failed: " + p.packageWhy(t.pkg) + ")"
		}
		p.pkgHasFailingTest[t.pkg] = true
		p.out = append(p.out, TestResult{Source: SourceGoTest, Suite: t.pkg, Name: t.name, Status: StatusFail,
			Reason: reason, Output: strings.Join(t.output, "\n"), IDs: IDsIn(t.name)})
	}
	// Packages that failed without any failing test: build failures,
	// TestMain failures and the like.
	for _, pkg := range p.pkgOrder {
		if p.pkgHasFailingTest[pkg] {
			continue
		}
		p.out = append(p.out, TestResult{Source: SourceGoTest, Suite: pkg, Name: "package", Status: StatusFail,
			Reason: p.packageWhy(pkg), Output: strings.Join(p.pkgOutput[pkg], "\n"), SuiteLevel: true})
	}
	return p.out
}

func (p *goTestParser) packageWhy(pkg string) string {
	if why := p.pkgFailed[pkg]; why != "" {
		return why
	}
	return packageFailure(p.pkgOutput[pkg])
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
