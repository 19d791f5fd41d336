package testplan

import (
	"regexp"
	"strings"
)

// Ginkgo writes a spec's labels into the JUnit testcase name; these helpers
// take them back out.

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
