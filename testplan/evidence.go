package testplan

import "fmt"

// What the writers show of a test as evidence, shared by Markdown and HTML.

const (
	maxEvidenceTests = 4   // per kind of evidence and item
	maxNameLen       = 400 // the full spec text: it is the evidence
	maxReasonLen     = 300
)

// StatusMeaning says what each verdict means, for the reports' legends.
var StatusMeaning = map[Status]string{
	StatusPass:           "every test carrying the id passed",
	StatusPartial:        "some tests of the id passed, others skipped (reasons shown)",
	StatusReferenceOnly:  "only the reference implementation's unit tests prove it; nothing checked it against the cluster under test",
	StatusSkip:           "every test of the id skipped (reasons shown)",
	StatusNotImplemented: "the implementation under test does not implement the KEP of the id's specs (the prerequisite check's reason shown); neither a pass nor a failure",
	StatusFail:           "a test of the id failed",
	StatusMissing:        "no test carries the id",
}

// evidenceLine is one test as the report shows it.
type evidenceLine struct {
	Name   string
	Status Status
	Reason string
	// Reading is the reading of the KEP the implementation took, where the
	// KEP allows more than one (TestResult.Reading).
	Reading string
}

// Text renders "name" for a pass and "name (SKIP: reason)" otherwise.
func (e evidenceLine) Text() string {
	switch {
	case e.Status == StatusPass && e.Reading != "":
		return fmt.Sprintf("%s (reading taken: %s)", e.Name, e.Reading)
	case e.Status == StatusPass:
		return e.Name
	case e.Reason == "":
		return fmt.Sprintf("%s (%s)", e.Name, e.Status)
	}
	return fmt.Sprintf("%s (%s: %s)", e.Name, e.Status, e.Reason)
}

// evidenceLines returns up to maxEvidenceTests distinct lines (the tests
// come failures first) and how many more there were.
func evidenceLines(tests []TestResult) (lines []evidenceLine, more int) {
	seen := map[evidenceLine]bool{}
	for _, t := range tests {
		e := evidenceLine{Name: truncate(t.DisplayName(), maxNameLen), Status: t.Status, Reading: t.Reading}
		if t.Status != StatusPass {
			e.Reason = truncate(t.Reason, maxReasonLen)
		}
		if seen[e] {
			continue
		}
		seen[e] = true
		if len(lines) == maxEvidenceTests {
			more++
			continue
		}
		lines = append(lines, e)
	}
	return lines, more
}

// inputLine describes an input file in a sentence.
func inputLine(in Input) string {
	kind := fmt.Sprintf("%s (%s)", in.Source, in.Source.Evidence())
	var s string
	switch in.State {
	case InputNotGiven, "":
		s = kind + ": not given; contributes nothing"
	case InputNotFound:
		s = fmt.Sprintf("%s: %s: file not found; contributes nothing", kind, in.Path)
	case InputIgnored:
		s = fmt.Sprintf("%s: %s: ignored, it does not belong to this run: %s", kind, in.Path, in.Note)
	default:
		s = fmt.Sprintf("%s: %s (%s)", kind, in.Path, plural(in.Tests, "test result"))
		if in.Note != "" {
			s += "; " + in.Note
		}
	}
	return s
}
