package testplan

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/reporters"
	"github.com/onsi/ginkgo/v2/types"
)

// A spec's "reading" report entry (framework.ExpectGateOff) reaches the
// report next to the spec. The timeline is rendered by Ginkgo's own JUnit
// renderer, so a change of its format fails here, not silently in a report.
func TestReadingReachesTheReport(t *testing.T) {
	at := time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC)
	spec := func(text string, readings ...string) reporters.JUnitTestCase {
		r := types.SpecReport{LeafNodeText: text, State: types.SpecStatePassed, StartTime: at, EndTime: at.Add(time.Second)}
		r.ReportEntries = append(r.ReportEntries, types.ReportEntry{Name: "podgroup-protection finalizer sent by", Time: at, Location: types.CodeLocation{FileName: "/src/suites/x.go", LineNumber: 9}, Value: types.WrapEntryValue("the controller")})
		for _, reading := range readings {
			r.ReportEntries = append(r.ReportEntries, types.ReportEntry{Name: ReadingEntry, Time: at, Location: types.CodeLocation{FileName: "/src/framework/rejection.go", LineNumber: 196}, Value: types.WrapEntryValue(reading)})
		}
		return reporters.JUnitTestCase{Name: "[It] " + text + " [S-P6, KEP-6277]", Classname: "WAS", Status: "passed", SystemErr: reporters.RenderTimeline(r, true)}
	}
	suite := reporters.JUnitTestSuite{Name: "WAS", TestCases: []reporters.JUnitTestCase{
		spec("rejects or clears on create", "clears on create"),
		spec("both specs of one id", "rejects on create", "rejects on create"),
		spec("no reading recorded"),
	}}
	data, err := xml.Marshal(reporters.JUnitTestSuites{TestSuites: []reporters.JUnitTestSuite{suite}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ReadJUnit(writeFile(t, "junit.xml", string(data)))
	if err != nil {
		t.Fatalf("ReadJUnit: %v", err)
	}
	m := byName(res)
	for name, want := range map[string]string{"rejects or clears on create": "clears on create", "both specs of one id": "rejects on create", "no reading recorded": ""} {
		if got := m[name].Reading; got != want {
			t.Errorf("%q: reading %q, want %q (timeline:\n%s)", name, got, want, suite.TestCases[0].SystemErr)
		}
	}
	if got := evidenceCell([]TestResult{m["rejects or clears on create"]}, ""); !strings.Contains(got, "(reading taken: clears on create)") {
		t.Errorf("evidence cell %q does not show the reading", got)
	}
}
