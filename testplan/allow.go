package testplan

import (
	"fmt"
	"slices"
	"strings"
)

// A full run on a cluster that cannot run some ids (make e2e-kind
// ALLOW_DISRUPTIVE=1, --fail-on SKIP) fails on every id that did not run,
// unless the user names it with a reason: ALLOW_SKIP="S-P8=no 1.36 image; ...".
// The reason stays in the report, beside the id, and the id keeps its status:
// an allowance never turns a SKIP into a PASS.

// ParseAllowed reads "ID=reason; ID=reason" (a reason is required).
func ParseAllowed(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, entry := range strings.Split(s, ";") {
		if entry = strings.TrimSpace(entry); entry == "" {
			continue
		}
		id, reason, _ := strings.Cut(entry, "=")
		id, reason = strings.TrimSpace(id), strings.TrimSpace(reason)
		if id == "" || reason == "" {
			return nil, fmt.Errorf("%q: want ID=reason (the reason is kept in the report)", entry)
		}
		out[id] = reason
	}
	return out, nil
}

// Allow marks the results of the allowed ids that did not pass (and did not
// fail), and returns
// the allowed ids the plan does not have and those that passed anyway (an
// allowance to drop).
func (r *Report) Allow(allowed map[string]string) (unknown, passed []string) {
	seen := map[string]bool{}
	for i := range r.Results {
		res := &r.Results[i]
		reason, ok := allowed[res.Item.ID]
		if !ok {
			continue
		}
		seen[res.Item.ID] = true
		switch res.Status {
		case StatusPass:
			passed = append(passed, res.Item.ID)
		case StatusFail: // a failure is never allowed
		default:
			res.Allowed = reason
		}
	}
	for id := range allowed {
		if !seen[id] {
			unknown = append(unknown, id)
		}
	}
	slices.Sort(unknown)
	return unknown, passed
}

// CountsNotAllowed is Counts without the results an allowance covers.
func (r *Report) CountsNotAllowed() map[Status]int {
	var rest []Result
	for _, res := range r.Results {
		if res.Allowed == "" {
			rest = append(rest, res)
		}
	}
	return countStatuses(rest)
}
