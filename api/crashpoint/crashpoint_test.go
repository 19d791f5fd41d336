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
