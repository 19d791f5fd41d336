package testplan

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// htmlDoc renders rep and parses it back as a browser would.
func htmlDoc(t *testing.T, rep *Report) *html.Node {
	t.Helper()
	var b bytes.Buffer
	if err := rep.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(&b)
	if err != nil {
		t.Fatalf("testplan.html does not parse: %v", err)
	}
	return doc
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func textOf(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

func elements(doc *html.Node, tag string) []*html.Node {
	var out []*html.Node
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode && n.Data == tag {
			out = append(out, n)
		}
	}
	return out
}

func cellWithClass(tr *html.Node, class string) string {
	for _, td := range elements(tr, "td") {
		if attr(td, "class") == class {
			return textOf(td)
		}
	}
	return ""
}

func TestWriteHTMLIsSelfContainedAndShowsEveryID(t *testing.T) {
	rep := fullReport(t, ModeVendor)
	// Text from test output is escaped, never markup.
	last := len(rep.Results) - 1
	rep.Results[last].Cluster = append(rep.Results[last].Cluster, spec(`<script>alert("x")</script>`, StatusSkip, `<img src="https://example.com/x.png">`, rep.Results[last].Item.ID))
	doc := htmlDoc(t, rep)

	for _, tag := range []string{"script", "link", "img", "iframe", "object", "embed"} {
		if n := elements(doc, tag); len(n) > 0 {
			t.Errorf("testplan.html has a <%s> element: it must be self-contained and inert", tag)
		}
	}
	for n := range doc.Descendants() {
		for _, a := range n.Attr {
			if (a.Key == "href" || a.Key == "src") && !strings.HasPrefix(a.Val, "#") {
				t.Errorf("<%s %s=%q>: only links within the page are allowed", n.Data, a.Key, a.Val)
			}
		}
	}
	style := elements(doc, "style")
	if len(style) != 1 {
		t.Fatalf("%d <style> elements, want the one inline stylesheet", len(style))
	}
	css := textOf(style[0])

	rows := map[string]*html.Node{}
	for _, tr := range elements(doc, "tr") {
		if id := attr(tr, "id"); id != "" {
			rows[id] = tr
		}
	}
	tiles := map[string]string{}
	for _, a := range elements(doc, "a") {
		tiles[strings.TrimPrefix(attr(a, "href"), "#")] = attr(a, "class")
	}
	for _, res := range rep.Results {
		id, class := res.Item.ID, statusClass(res.Status)
		tr := rows[id]
		switch {
		case tr == nil:
			t.Errorf("no row for %s", id)
			continue
		case attr(tr, "class") != class || attr(tr, "data-status") != string(res.Status):
			t.Errorf("%s row class %q status %q, want %q %q", id, attr(tr, "class"), attr(tr, "data-status"), class, res.Status)
		case tiles[id] != class:
			t.Errorf("%s matrix tile class %q, want %q", id, tiles[id], class)
		}
	}
	for _, st := range Statuses {
		if !strings.Contains(css, "."+statusClass(st)+" {") {
			t.Errorf("the stylesheet has no colour for %s", st)
		}
	}

	for id, want := range map[string][2]string{
		"D-E1": {"Deployment skips SKIP needs a kubelet", "none"},
		"D-U1": {"none", "TestBuild/D-U1_compiles_constraints"},
		"D-U3": {"none", "TestBuild/D-U3_fail FAIL u_test.go:8: bad"},
		"S-E1": {"StatefulSet | piped", "none"},
		"S-V7": {"none", "TestMany/S-V7_case_0TestMany/S-V7_case_1TestMany/S-V7_case_2TestMany/S-V7_case_3… (+2 more)"},
	} {
		if got := cellWithClass(rows[id], "cluster"); got != want[0] {
			t.Errorf("%s cluster evidence %q, want %q", id, got, want[0])
		}
		if got := cellWithClass(rows[id], "reference"); got != want[1] {
			t.Errorf("%s reference evidence %q, want %q", id, got, want[1])
		}
	}
	lastID := rep.Results[last].Item.ID
	if got := cellWithClass(rows[lastID], "cluster"); got != `<script>alert("x")</script> SKIP <img src="https://example.com/x.png">` {
		t.Errorf("%s evidence %q: markup in test output must show as text", lastID, got)
	}
	summary := textOf(elements(doc, "body")[0])
	for _, s := range []string{rep.SummaryLine(), "Mode: vendor:", "Not recorded (no environment.json", "go test -json (reference implementation only): "} {
		if !strings.Contains(summary, s) {
			t.Errorf("page text lacks %q", s)
		}
	}
}

func TestWriteHTMLEnvironment(t *testing.T) {
	rep := Aggregate(smallPlan("D-E1"), nil, Options{})
	rep.Environment = &Environment{Cluster: "local", ServerVersion: "v1.37.2",
		APIs:     []APICheck{{GroupVersion: "resource.k8s.io/v1", Resources: []string{"resourceclaims"}}},
		Problems: []Problem{{Essential: true, Message: "nothing validates"}}}
	doc := htmlDoc(t, rep)
	var env *html.Node
	for _, ul := range elements(doc, "ul") {
		if attr(ul, "id") == "environment" {
			env = ul
		}
	}
	if env == nil {
		t.Fatal("no environment list")
	}
	got := textOf(env)
	for _, s := range []string{"Cluster: local cluster started by the harness", "Kubernetes version: v1.37.2", "resource.k8s.io/v1 (resourceclaims): not served", "missing: nothing validates"} {
		if !strings.Contains(got, s) {
			t.Errorf("environment %q lacks %q", got, s)
		}
	}
	if strong := elements(env, "strong"); len(strong) != 2 {
		t.Errorf("%d emphasised parts, want 2 (not served, missing)", len(strong))
	}
}
