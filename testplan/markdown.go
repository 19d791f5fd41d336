package testplan

import (
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown writes the report as markdown (testplan.md).
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	title := "Conformance report"
	if keps := r.KEPs(); len(keps) > 0 {
		title += ": " + strings.Join(keps, ", ")
	}
	fmt.Fprintf(&b, "# %s\n\n**%s**\n\n", title, r.SummaryLine())
	fmt.Fprintf(&b, "Mode: %s\n\n", r.ModeSentence())
	for _, st := range Statuses {
		fmt.Fprintf(&b, "- %s: %s\n", st, StatusMeaning[st])
	}
	b.WriteString("\n")
	writeEnvironmentMarkdown(&b, r.Environment)
	r.writeInputsMarkdown(&b)
	r.writeSuiteFailuresMarkdown(&b)
	for _, kep := range r.KEPs() {
		rows := r.ResultsOf(kep)
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", kep, summary(rows))
		fmt.Fprintf(&b, "| id | level | result | %s | %s | item |\n", EvidenceCluster, EvidenceReference)
		b.WriteString("|---|---|---|---|---|---|\n")
		for _, res := range rows {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", res.Item.ID, res.Item.Level, res.Status,
				evidenceCell(res.Cluster, ""), evidenceCell(res.Reference, res.Reason), cell(res.Item.Text))
		}
		b.WriteString("\n")
	}
	r.writeUnknownMarkdown(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) writeInputsMarkdown(b *strings.Builder) {
	b.WriteString("## Inputs\n\n")
	if len(r.Inputs) == 0 {
		b.WriteString("- (not recorded)\n")
	}
	for _, in := range r.Inputs {
		fmt.Fprintf(b, "- %s\n", cell(inputLine(in)))
	}
	b.WriteString("\n")
}

func (r *Report) writeSuiteFailuresMarkdown(b *strings.Builder) {
	if len(r.SuiteFailures) == 0 {
		return
	}
	b.WriteString("## Suite-level failures\n\n")
	b.WriteString("Ids of these suites that got no result of their own are reported as FAIL, never PASS.\n\n")
	for _, f := range r.SuiteFailures {
		fmt.Fprintf(b, "- %s, %s: %s", f.Source, cell(f.DisplayName()), cell(truncate(f.Reason, maxReasonLen)))
		if len(f.IDs) > 0 {
			fmt.Fprintf(b, " (FAIL for %s)", strings.Join(f.IDs, ", "))
		} else {
			b.WriteString(" (no test of this suite/package reported a result, so the ids it covers cannot be identified: they stay MISSING unless another test names them)")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

func (r *Report) writeUnknownMarkdown(b *strings.Builder) {
	b.WriteString("## Unknown ids\n\n")
	if len(r.Unknown) == 0 {
		b.WriteString("None: every id named by a test is in the plan.\n")
		return
	}
	b.WriteString("Ids named by tests but not in the plan (likely typos):\n\n")
	b.WriteString("| id | tests |\n|---|---|\n")
	for _, u := range r.Unknown {
		var names []string
		for _, t := range u.Tests {
			names = appendUnique(names, fmt.Sprintf("%s (%s)", truncate(t.DisplayName(), maxNameLen), t.Status))
		}
		fmt.Fprintf(b, "| %s | %s |\n", cell(u.ID), cell(strings.Join(names, "; ")))
	}
}

// evidenceCell lists tests of one kind, one per line, and the item's own
// reason (unit tests not read) when there are none.
func evidenceCell(tests []TestResult, reason string) string {
	lines, more := evidenceLines(tests)
	var parts []string
	for _, e := range lines {
		parts = append(parts, cell(e.Text()))
	}
	if more > 0 {
		parts = append(parts, fmt.Sprintf("… (+%d more)", more))
	}
	if reason != "" {
		parts = append(parts, cell(reason))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "<br>")
}

var cellEscaper = strings.NewReplacer(
	"&", "&amp;", "<", "&lt;", ">", "&gt;", "|", `\|`,
	"\r\n", " ", "\n", " ", "\r", " ",
)

// cell makes s safe inside a markdown table cell.
func cell(s string) string {
	return cellEscaper.Replace(s)
}
