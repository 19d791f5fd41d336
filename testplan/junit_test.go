package testplan

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadJUnit(t *testing.T) {
	res, err := ReadJUnit(writeFile(t, "junit.xml", junitFixture))
	if err != nil {
		t.Fatalf("ReadJUnit: %v", err)
	}
	if len(res) != 9 {
		for _, r := range res {
			t.Logf("%+v", r)
		}
		t.Fatalf("got %d results, want 9 (the passed [BeforeSuite] is dropped)", len(res))
	}
	m := byName(res)
	for _, tc := range []struct {
		name   string
		status Status
		reason string
		ids    []string
		labels []string
	}{
		{"Deployment D-I2 creation ordering", StatusPass, "", []string{"D-I2"}, []string{"kep-6276", "D-I2", "Serial", "suite-label", "Feature:GenericWorkload"}},
		{"Deployment fails", StatusFail, "Expected <int>: 1 to equal <int>: 2", []string{"D-I3"}, nil},
		{"Deployment skips", StatusSkip, "needs a kubelet", []string{"D-E1"}, nil},
		{"Deployment pending one", StatusSkip, "pending", []string{"D-E2"}, nil},
		{"Deployment [D-E3] in text", StatusPass, "", []string{"D-E3"}, []string{"kep-6276", "suite-label", "Feature:GenericWorkload"}},
		{"Deployment panics", StatusFail, "boom", []string{"D-E4"}, nil},
		{"Deployment times out", StatusFail, "A spec timeout occurred", []string{"D-E5"}, []string{"kep-6276", "D-E5", "suite-label", "Feature:GenericWorkload"}},
		{"StatefulSet | piped", StatusPass, "", []string{"S-E1"}, nil},
	} {
		r, ok := m[tc.name]
		if !ok {
			t.Errorf("no result named %q; have %v", tc.name, keys(m))
			continue
		}
		if r.Status != tc.status || r.Reason != tc.reason || !reflect.DeepEqual(r.IDs, tc.ids) {
			t.Errorf("%q: got status %s reason %q ids %v; want %s %q %v", tc.name, r.Status, r.Reason, r.IDs, tc.status, tc.reason, tc.ids)
		}
		if tc.labels != nil && !reflect.DeepEqual(r.Labels, tc.labels) {
			t.Errorf("%q: labels %q, want %q", tc.name, r.Labels, tc.labels)
		}
		if r.Source != SourceJUnit || r.Suite != "A Suite" || r.SuiteLevel {
			t.Errorf("%q: source %q suite %q suiteLevel %v", tc.name, r.Source, r.Suite, r.SuiteLevel)
		}
	}
}

func keys(m map[string]TestResult) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestReadJUnitSuiteLevelFailure(t *testing.T) {
	res, err := ReadJUnit(writeFile(t, "junit.xml", junitBeforeSuiteFailed))
	if err != nil {
		t.Fatalf("ReadJUnit: %v", err)
	}
	var suiteLevel []TestResult
	for _, r := range res {
		if r.SuiteLevel {
			suiteLevel = append(suiteLevel, r)
		}
	}
	if len(suiteLevel) != 1 {
		t.Fatalf("got %d suite-level results, want 1 (failed [SynchronizedBeforeSuite] only): %+v", len(suiteLevel), suiteLevel)
	}
	sl := suiteLevel[0]
	if sl.Name != "[SynchronizedBeforeSuite]" || sl.Status != StatusFail || !strings.HasPrefix(sl.Reason, "cluster not reachable") {
		t.Errorf("suite-level result = %+v", sl)
	}
	// S-I2 was skipped by Ginkgo without a reason and S-P6 is a suite label:
	// neither got a result of its own. S-I3 was skipped with a reason.
	if want := []string{"S-I2", "S-P6"}; !reflect.DeepEqual(sl.IDs, want) {
		t.Errorf("suite-level ids = %v, want %v", sl.IDs, want)
	}

	// Even if another input passes those ids, they must not be PASS.
	unit := []TestResult{
		{Source: SourceGoTest, Name: "TestX/S-I2", Status: StatusPass, IDs: []string{"S-I2"}},
		{Source: SourceGoTest, Name: "TestX/S-P6", Status: StatusPass, IDs: []string{"S-P6"}},
		{Source: SourceGoTest, Name: "TestX/S-I3", Status: StatusPass, IDs: []string{"S-I3"}},
	}
	// S-I3's spec skipped with a reason: the unit test cannot make it PASS.
	rep := Aggregate(loadPlan(t), append(res, unit...), Options{Mode: ModeHarness})
	for id, want := range map[string]Status{"S-I2": StatusFail, "S-P6": StatusFail, "S-I3": StatusPartial} {
		if got, _ := rep.Get(id); got.Status != want {
			t.Errorf("%s: %s, want %s", id, got.Status, want)
		}
	}
	if len(rep.SuiteFailures) != 1 {
		t.Errorf("report has %d suite failures, want 1", len(rep.SuiteFailures))
	}
	md := markdown(t, rep)
	for _, s := range []string{"## Suite-level failures", "[SynchronizedBeforeSuite] (B Suite): cluster not reachable", "FAIL for S-I2, S-P6"} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q", s)
		}
	}
}

func TestReadJUnitVariants(t *testing.T) {
	// A bare <testsuite> root, generic JUnit elements without Ginkgo's status
	// attribute, and Ginkgo's OmitLeafNodeType naming.
	doc := `<testsuite name="plain">
  <testcase name="D-V1 rejects [D-V1]"/>
  <testcase name="D-V2 broken"><error message="" type="interrupted">interrupted by user</error></testcase>
  <testcase name="D-V3"><skipped/></testcase>
  <testcase name="[Serial] D-P1 looks like a node type"/>
  <testcase name=""><failure message="AfterSuite went wrong"/></testcase>
</testsuite>`
	res, err := ReadJUnit(writeFile(t, "plain.xml", doc))
	if err != nil {
		t.Fatalf("ReadJUnit: %v", err)
	}
	m := byName(res)
	check := func(name string, st Status, reason string) {
		t.Helper()
		r, ok := m[name]
		if !ok {
			t.Errorf("no result %q in %v", name, keys(m))
			return
		}
		if r.Status != st || r.Reason != reason {
			t.Errorf("%q: %s %q, want %s %q", name, r.Status, r.Reason, st, reason)
		}
	}
	check("D-V1 rejects", StatusPass, "")
	check("D-V2 broken", StatusFail, "interrupted by user")
	check("D-V3", StatusSkip, "skipped")
	check("[Serial] D-P1 looks like a node type", StatusPass, "")
	check("[suite node]", StatusFail, "AfterSuite went wrong")
	if !m["[suite node]"].SuiteLevel || !reflect.DeepEqual(m["[suite node]"].IDs, []string{"D-V3"}) {
		t.Errorf("suite node result = %+v, want SuiteLevel with ids [D-V3]", m["[suite node]"])
	}
}

func TestReadJUnitErrors(t *testing.T) {
	_, err := ReadJUnit(filepath.Join(t.TempDir(), "absent.xml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist", err)
	}
	for name, doc := range map[string]string{
		"truncated":  junitFixture[:len(junitFixture)/2],
		"wrong root": `<html><body/></html>`,
		"empty":      ``,
		"not xml":    `{"Action":"pass"}`,
	} {
		p := writeFile(t, "bad.xml", doc)
		_, err := ReadJUnit(p)
		if err == nil {
			t.Errorf("%s: ReadJUnit succeeded, want error", name)
			continue
		}
		if errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "malformed JUnit") {
			t.Errorf("%s: error %q should name %s and say malformed", name, err, p)
		}
	}
}

func TestSplitSpecLabels(t *testing.T) {
	for _, tc := range []struct {
		in, text string
		labels   []string
	}{
		{"Deployment gang [D-I2, Serial, Feature:GenericWorkload]", "Deployment gang", []string{"D-I2", "Serial", "Feature:GenericWorkload"}},
		{"no labels at all", "no labels at all", nil},
		{"Deployment [D-E3] in text [kep-6276]", "Deployment [D-E3] in text", []string{"kep-6276"}},
		{"with semver [D-E5] [>= 1.36.0, < 2.0]", "with semver", []string{"D-E5"}},
		{"with component [D-E6] [>= 1.0] [kube: [>= 1.36]]", "with component", []string{"D-E6"}},
		{"text ends [foo] [a, b]", "text ends [foo]", []string{"a", "b"}},
		{"glued[D-E7]", "glued[D-E7]", nil},
		{"version only [1.36]", "version only", nil},
	} {
		text, labels := splitSpecLabels(tc.in)
		if text != tc.text || !reflect.DeepEqual(labels, tc.labels) {
			t.Errorf("splitSpecLabels(%q) = %q, %q; want %q, %q", tc.in, text, labels, tc.text, tc.labels)
		}
	}
}
