package crashpoint

import (
	"strings"
	"testing"
)

func TestArgRoundTripsThroughParseArg(t *testing.T) {
	for _, p := range Known {
		for _, ns := range []string{"", "crash-1234"} {
			gotP, gotNS, err := ParseArg(Arg(p, ns))
			if err != nil || gotP != p || gotNS != ns {
				t.Errorf("ParseArg(Arg(%s, %q)) = %s, %q, %v", p, ns, gotP, gotNS, err)
			}
		}
	}
	if p, ns, err := ParseArg(""); p != "" || ns != "" || err != nil {
		t.Errorf("ParseArg(\"\") = %q, %q, %v; want nothing armed", p, ns, err)
	}
}

func TestParseArgNamesTheKnownPoints(t *testing.T) {
	_, _, err := ParseArg("deployment/after-lunch@ns")
	if err == nil {
		t.Fatal("an unknown point was accepted")
	}
	for _, p := range Known {
		if !strings.Contains(err.Error(), string(p)) {
			t.Errorf("error %q does not list %s", err, p)
		}
	}
}

func TestWritePointsRoundTripAndRejectNonOrdinals(t *testing.T) {
	for _, n := range []int{1, 7, 12} {
		p := AfterWrite(n)
		if got, ok := p.WriteOrdinal(); !ok || got != n {
			t.Errorf("%s.WriteOrdinal() = %d, %t; want %d", p, got, ok, n)
		}
		if gotP, gotNS, err := ParseArg(Arg(p, "ns")); err != nil || gotP != p || gotNS != "ns" {
			t.Errorf("ParseArg(Arg(%s, ns)) = %s, %q, %v", p, gotP, gotNS, err)
		}
	}
	for _, bad := range []string{"write/0", "write/-1", "write/01", "write/x", "write/"} {
		if _, _, err := ParseArg(bad); err == nil {
			t.Errorf("ParseArg(%q) accepted a write point with no ordinal >= 1", bad)
		}
	}
	if _, ok := DeploymentAfterWorkloadCreate.WriteOrdinal(); ok {
		t.Error("a named point has a write ordinal")
	}
}

func TestMarkerDoesNotMatchALongerOrdinal(t *testing.T) {
	line := LogPrefix + string(AfterWrite(10)) + " (namespace ns): create pods"
	if strings.Contains(line, Marker(AfterWrite(1))) {
		t.Errorf("Marker(write/1) %q is found in %q", Marker(AfterWrite(1)), line)
	}
	if !strings.Contains(line, Marker(AfterWrite(10))) {
		t.Errorf("Marker(write/10) is not found in %q", line)
	}
}
