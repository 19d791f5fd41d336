package testplan

import (
	"strings"
	"testing"
)

func TestAllow(t *testing.T) {
	allowed, err := ParseAllowed(" S-P8 = no 1.36 image ; D-E6=crash points need the local cluster;")
	if err != nil || allowed["S-P8"] != "no 1.36 image" || len(allowed) != 2 {
		t.Fatalf("ParseAllowed: %v, %v", allowed, err)
	}
	for _, bad := range []string{"S-P8", "S-P8=", "=why"} {
		if _, err := ParseAllowed(bad); err == nil {
			t.Errorf("ParseAllowed(%q): want an error (an allowance needs an id and a reason)", bad)
		}
	}
	rep := &Report{Results: []Result{
		{Item: Item{ID: "S-P8"}, Status: StatusSkip},
		{Item: Item{ID: "D-E6"}, Status: StatusFail},
		{Item: Item{ID: "D-P1"}, Status: StatusPass},
		{Item: Item{ID: "D-P2"}, Status: StatusSkip},
	}}
	unknown, passed := rep.Allow(map[string]string{"S-P8": "no image", "D-E6": "x", "D-P1": "y", "X-1": "z"})
	if strings.Join(unknown, ",") != "X-1" || strings.Join(passed, ",") != "D-P1" {
		t.Fatalf("unknown %v, passed %v; want [X-1], [D-P1]", unknown, passed)
	}
	c := rep.CountsNotAllowed()
	if c[StatusSkip] != 1 || c[StatusFail] != 1 || c[StatusPass] != 1 {
		t.Fatalf("counts without the allowed: %v; want SKIP 1 (D-P2), FAIL 1 (a failure is never allowed), PASS 1", c)
	}
	if all := rep.Counts(); all[StatusSkip] != 2 {
		t.Fatalf("Counts still counts the allowed SKIP as SKIP: %v", all)
	}
	if r, _ := rep.Get("S-P8"); r.Status != StatusSkip || !strings.Contains(strings.Join(r.Reasons(), " "), "ALLOW_SKIP): no image") {
		t.Fatalf("S-P8: %s %v; want SKIP with the allowance's reason", r.Status, r.Reasons())
	}
}
