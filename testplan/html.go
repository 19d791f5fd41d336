package testplan

import (
	"html/template"
	"io"
	"strings"
)

// WriteHTML writes the report as one self-contained HTML page
// (testplan.html): no scripts, fonts or stylesheets from elsewhere. It shows
// the summary, a matrix of every id coloured by status, and per KEP a table
// with each id's evidence, by kind, and the reasons it is not PASS.
func (r *Report) WriteHTML(w io.Writer) error {
	return htmlPage.Execute(w, r.htmlData())
}

type htmlStatus struct {
	Status  Status
	Class   string
	Count   int
	Meaning string
}

type htmlRow struct {
	ID, Level, Text string
	Status          Status
	Class           string
	Cluster         htmlEvidence
	Reference       htmlEvidence
}

type htmlEvidence struct {
	Lines []htmlLine
	More  int
	// Note is the item's own reason (unit tests not read).
	Note string
}

type htmlLine struct {
	Name    string
	Status  Status
	Class   string
	Reason  string
	Reading string
}

type htmlKEP struct {
	Name    string
	Summary string
	Rows    []htmlRow
}

type htmlUnknown struct {
	ID    string
	Tests []string
}

type htmlData struct {
	Title, Summary, Mode string
	Statuses             []htmlStatus
	EnvironmentMissing   string
	Environment          []envFact
	Inputs               []string
	SuiteFailures        []string
	KEPs                 []htmlKEP
	Unknown              []htmlUnknown
}

func statusClass(st Status) string { return "st-" + strings.ToLower(string(st)) }

func (r *Report) htmlData() htmlData {
	d := htmlData{Title: "Conformance report", Summary: r.SummaryLine(), Mode: r.ModeSentence()}
	if keps := r.KEPs(); len(keps) > 0 {
		d.Title += ": " + strings.Join(keps, ", ")
	}
	counts := r.Counts()
	for _, st := range Statuses {
		d.Statuses = append(d.Statuses, htmlStatus{Status: st, Class: statusClass(st), Count: counts[st], Meaning: StatusMeaning[st]})
	}
	if r.Environment == nil {
		d.EnvironmentMissing = environmentNotRecorded
	} else {
		d.Environment = environmentFacts(r.Environment)
	}
	for _, in := range r.Inputs {
		d.Inputs = append(d.Inputs, inputLine(in))
	}
	for _, f := range r.SuiteFailures {
		d.SuiteFailures = append(d.SuiteFailures, f.Source.String()+", "+f.DisplayName()+": "+truncate(f.Reason, maxReasonLen))
	}
	for _, kep := range r.KEPs() {
		rows := r.ResultsOf(kep)
		k := htmlKEP{Name: kep, Summary: summary(rows)}
		for _, res := range rows {
			k.Rows = append(k.Rows, htmlRow{ID: res.Item.ID, Level: res.Item.Level, Text: res.Item.Text,
				Status: res.Status, Class: statusClass(res.Status),
				Cluster: htmlEvidenceOf(res.Cluster, ""), Reference: htmlEvidenceOf(res.Reference, res.Reason)})
		}
		d.KEPs = append(d.KEPs, k)
	}
	for _, u := range r.Unknown {
		hu := htmlUnknown{ID: u.ID}
		for _, t := range u.Tests {
			hu.Tests = appendUnique(hu.Tests, truncate(t.DisplayName(), maxNameLen)+" ("+string(t.Status)+")")
		}
		d.Unknown = append(d.Unknown, hu)
	}
	return d
}

// String returns the source's name.
func (s Source) String() string { return string(s) }

func htmlEvidenceOf(tests []TestResult, note string) htmlEvidence {
	lines, more := evidenceLines(tests)
	e := htmlEvidence{More: more, Note: note}
	for _, l := range lines {
		e.Lines = append(e.Lines, htmlLine{Name: l.Name, Status: l.Status, Class: statusClass(l.Status), Reason: l.Reason, Reading: l.Reading})
	}
	return e
}

var htmlPage = template.Must(template.New("testplan.html").Parse(htmlTemplate))

const htmlTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 24px; color: #1f2328; }
h1 { font-size: 22px; margin: 0 0 8px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
.summary { font-weight: 600; }
.chips span, .badge { display: inline-block; border-radius: 10px; padding: 1px 9px; margin: 2px 4px 2px 0; font-weight: 600; font-size: 12px; }
.matrix { display: flex; flex-wrap: wrap; gap: 4px; margin: 6px 0 12px; }
.matrix a { display: block; width: 58px; text-align: center; padding: 3px 0; border-radius: 4px; font: 600 12px ui-monospace, monospace; text-decoration: none; }
table { border-collapse: collapse; width: 100%; }
th, td { border: 1px solid #d0d7de; padding: 4px 6px; vertical-align: top; text-align: left; }
td.cluster, td.reference { width: 30%; overflow-wrap: anywhere; }
.badge, td.level { white-space: nowrap; }
.badge { border: 1px solid rgba(31, 35, 40, 0.15); }
th { background: #f6f8fa; }
td.id { font: 600 13px ui-monospace, monospace; white-space: nowrap; }
td ul { margin: 0; padding-left: 16px; }
.reason { color: #57606a; }
#legend { list-style: none; padding: 0; columns: 2; margin: 4px 0; }
.none { color: #8c959f; }
.st-pass { background: #dafbe1; color: #116329; }
.st-partial { background: #fff1b8; color: #7d4e00; }
.st-reference-only { background: #ddf4ff; color: #0a3069; }
.st-skip { background: #eaeef2; color: #424a53; }
.st-not-implemented { background: #f6f8fa; color: #57606a; border: 1px dashed #8c959f; }
.st-fail { background: #ffcecb; color: #a40e26; }
.st-missing { background: #f5e0ff; color: #6e2ba5; }
tr.st-pass td, tr.st-partial td, tr.st-reference-only td, tr.st-skip td, tr.st-not-implemented td, tr.st-fail td, tr.st-missing td { color: #1f2328; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="summary" id="summary">{{.Summary}}</p>
<p class="chips">{{range .Statuses}}<span class="{{.Class}}" title="{{.Meaning}}">{{.Status}} {{.Count}}</span>{{end}}</p>
<p id="mode"><b>Mode:</b> {{.Mode}}</p>
<ul id="legend">{{range .Statuses}}<li><span class="badge {{.Class}}">{{.Status}}</span> {{.Meaning}}</li>{{end}}</ul>
<h2>Id matrix</h2>
{{range .KEPs}}<p><b>{{.Name}}</b>: {{.Summary}}</p>
<div class="matrix">{{range .Rows}}<a class="{{.Class}}" href="#{{.ID}}" title="{{.ID}}: {{.Status}}">{{.ID}}</a>{{end}}</div>
{{end}}
<h2>Environment</h2>
{{if .EnvironmentMissing}}<p>{{.EnvironmentMissing}}</p>{{else}}<ul id="environment">{{range .Environment}}
<li>{{if .LabelWarn}}<strong>{{.Label}}</strong>{{else}}{{.Label}}{{end}}: {{range .Parts}}{{if .Warn}}<strong>{{.Text}}</strong>{{else}}{{.Text}}{{end}}{{end}}{{if .Sub}}<ul>{{range .Sub}}<li>{{.}}</li>{{end}}</ul>{{end}}</li>{{end}}
</ul>{{end}}
<h2>Inputs</h2>
<ul id="inputs">{{range .Inputs}}<li>{{.}}</li>{{else}}<li>(not recorded)</li>{{end}}</ul>
{{if .SuiteFailures}}<h2>Suite-level failures</h2>
<p>Ids of these suites that got no result of their own are reported as FAIL, never PASS.</p>
<ul>{{range .SuiteFailures}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{range .KEPs}}<h2 id="{{.Name}}">{{.Name}}</h2>
<p>{{.Summary}}</p>
<table>
<thead><tr><th>id</th><th>level</th><th>result</th><th>against the cluster under test</th><th>reference implementation only</th><th>item</th></tr></thead>
<tbody>{{range .Rows}}
<tr id="{{.ID}}" class="{{.Class}}" data-status="{{.Status}}"><td class="id">{{.ID}}</td><td class="level">{{.Level}}</td><td><span class="badge {{.Class}}">{{.Status}}</span></td><td class="cluster">{{template "evidence" .Cluster}}</td><td class="reference">{{template "evidence" .Reference}}</td><td>{{.Text}}</td></tr>{{end}}
</tbody>
</table>
{{end}}
<h2>Unknown ids</h2>
{{if .Unknown}}<p>Ids named by tests but not in the plan (likely typos):</p>
<ul id="unknown">{{range .Unknown}}<li><b>{{.ID}}</b>: {{range $i, $t := .Tests}}{{if $i}}; {{end}}{{$t}}{{end}}</li>{{end}}</ul>
{{else}}<p>None: every id named by a test is in the plan.</p>{{end}}
</body>
</html>
{{define "evidence"}}{{if or .Lines .Note}}<ul>{{range .Lines}}<li>{{.Name}}{{if .Reading}} <span class="reason">reading taken: {{.Reading}}</span>{{end}}{{if ne .Status "PASS"}} <span class="badge {{.Class}}">{{.Status}}</span>{{if .Reason}} <span class="reason">{{.Reason}}</span>{{end}}{{end}}</li>{{end}}{{if .More}}<li>… (+{{.More}} more)</li>{{end}}{{if .Note}}<li class="reason">{{.Note}}</li>{{end}}</ul>{{else}}<span class="none">none</span>{{end}}{{end}}`
