// Package flakes turns the JUnit reports of repeated suite runs into one
// flake-rate table: per spec, how often it ran, passed, failed or skipped.
// `make stress REPEAT=N` writes it to $ARTIFACTS/flakes.md.
package flakes

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/onsi/ginkgo/v2/reporters"
)

// Spec is one spec's record across runs.
type Spec struct {
	Name                          string
	Runs, Passed, Failed, Skipped int
	// FirstFailure is the message of the first failure seen, for the table.
	FirstFailure string
}

// Rate is the fraction of the runs in which the spec ran (not skipped) that failed.
func (s Spec) Rate() float64 {
	ran := s.Passed + s.Failed
	if ran == 0 {
		return 0
	}
	return float64(s.Failed) / float64(ran)
}

// Table is the aggregate of several reports.
type Table struct {
	Reports int
	// Missing lists the reports that could not be read (a run that died
	// before writing its report counts as a failed run of the whole suite).
	Missing []string
	Specs   map[string]*Spec
}

// Read aggregates the JUnit files at paths. Unreadable files are recorded in
// Missing rather than aborting: they are part of the evidence.
func Read(paths []string) *Table {
	t := &Table{Specs: map[string]*Spec{}}
	for _, p := range paths {
		t.Reports++
		b, err := os.ReadFile(p)
		if err != nil {
			t.Missing = append(t.Missing, p)
			continue
		}
		var suites reporters.JUnitTestSuites
		if err := xml.Unmarshal(b, &suites); err != nil {
			t.Missing = append(t.Missing, p+": "+err.Error())
			continue
		}
		for _, suite := range suites.TestSuites {
			for _, tc := range suite.TestCases {
				t.add(tc)
			}
		}
	}
	return t
}

func (t *Table) add(tc reporters.JUnitTestCase) {
	// Suite-level nodes ([SynchronizedBeforeSuite], [ReportAfterSuite]) are kept:
	// a setup that fails is a flake like any other.
	s := t.Specs[tc.Name]
	if s == nil {
		s = &Spec{Name: tc.Name}
		t.Specs[tc.Name] = s
	}
	s.Runs++
	switch {
	case tc.Failure != nil || tc.Error != nil:
		s.Failed++
		if s.FirstFailure == "" {
			msg := ""
			if tc.Failure != nil {
				msg = tc.Failure.Message
			} else {
				msg = tc.Error.Message
			}
			s.FirstFailure = firstLine(msg)
		}
	case tc.Skipped != nil:
		s.Skipped++
	default:
		s.Passed++
	}
}

// Failed reports whether any spec failed in any run, or a report is missing.
func (t *Table) Failed() bool {
	if len(t.Missing) > 0 {
		return true
	}
	for _, s := range t.Specs {
		if s.Failed > 0 {
			return true
		}
	}
	return false
}

// WriteMarkdown writes the table, flakiest specs first.
func (t *Table) WriteMarkdown(w io.Writer, title string) error {
	specs := make([]*Spec, 0, len(t.Specs))
	for _, s := range t.Specs {
		specs = append(specs, s)
	}
	sort.Slice(specs, func(i, j int) bool {
		if specs[i].Failed != specs[j].Failed {
			return specs[i].Failed > specs[j].Failed
		}
		return specs[i].Name < specs[j].Name
	})
	failedSpecs := 0
	for _, s := range specs {
		if s.Failed > 0 {
			failedSpecs++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%d runs, %d specs, %d specs failed at least once, %d reports missing.\n\n", title, t.Reports, len(specs), failedSpecs, len(t.Missing))
	for _, m := range t.Missing {
		fmt.Fprintf(&b, "* missing report: %s\n", m)
	}
	b.WriteString("\n| flake rate | failed | passed | skipped | spec | first failure |\n|---:|---:|---:|---:|---|---|\n")
	for _, s := range specs {
		fmt.Fprintf(&b, "| %.0f%% | %d | %d | %d | %s | %s |\n", 100*s.Rate(), s.Failed, s.Passed, s.Skipped, escape(s.Name), escape(s.FirstFailure))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
