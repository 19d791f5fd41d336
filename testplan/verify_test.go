package testplan

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

func dryRunReport(t *testing.T, specs ...types.SpecReport) string {
	t.Helper()
	data, err := json.Marshal([]types.Report{{SuiteDescription: "s", SpecReports: specs}})
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "specs.json", string(data))
}

func TestReadGinkgoDryRun(t *testing.T) {
	path := dryRunReport(t,
		types.SpecReport{LeafNodeType: types.NodeTypeBeforeSuite, State: types.SpecStatePassed},
		types.SpecReport{LeafNodeType: types.NodeTypeIt, ContainerHierarchyTexts: []string{"Deployment"}, LeafNodeText: "creates the Workload first",
			ContainerHierarchyLabels: [][]string{{"KEP-6276"}}, LeafNodeLabels: []string{"D-I2"}, State: types.SpecStatePassed},
		types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: "gate off [D-P1 in text]", LeafNodeLabels: []string{"Disruptive", "S-P1"}, State: types.SpecStatePassed},
		types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: "not written yet", LeafNodeLabels: []string{"S-E1"}, State: types.SpecStatePending},
	)
	specs, err := ReadGinkgoDryRun(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Spec{
		{Text: "Deployment creates the Workload first", Labels: []string{"KEP-6276", "D-I2"}, IDs: []string{"D-I2"}},
		{Text: "gate off [D-P1 in text]", Labels: []string{"Disruptive", "S-P1"}, IDs: []string{"D-P1", "S-P1"}, Disruptive: true},
	}
	if !reflect.DeepEqual(specs, want) {
		t.Errorf("specs =\n%+v\nwant\n%+v", specs, want)
	}
	if _, err := ReadGinkgoDryRun(dryRunReport(t)); err == nil {
		t.Errorf("a dry run without specs was accepted")
	}
	if _, err := ReadGinkgoDryRun(writeFile(t, "x.json", "<xml/>")); err == nil || !strings.Contains(err.Error(), "not a Ginkgo JSON report") {
		t.Errorf("malformed report: %v", err)
	}
}

const goTestList = `m/controllers/a TestOne
m/controllers/a FuzzTwo
m/controllers/a BenchmarkThree
m/controllers/a ok  	m/controllers/a	0.01s

`

func TestReadGoTestList(t *testing.T) {
	got, err := ReadGoTestList(strings.NewReader(goTestList))
	if err != nil || !reflect.DeepEqual(got, map[string][]string{"m/controllers/a": {"TestOne", "FuzzTwo"}}) {
		t.Errorf("ReadGoTestList = %v, %v", got, err)
	}
	if _, err := ReadGoTestList(strings.NewReader("")); err == nil {
		t.Errorf("no tests listed: no error")
	}
}

func TestFindUnitTestsAndCheckCoverage(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "controllers", "a")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := "package a\n\nimport \"testing\"\n\n" +
		"var table = []struct{ name string }{{\"S-U2_from_a_table\"}}\n\n" +
		"// D-U3 in a comment is not a test.\n" +
		"func TestOne(t *testing.T) {\n" +
		"\tt.Run(\"D-U1_compiles\", func(t *testing.T) { t.Errorf(\"D-U4 in a message is not a test name\") })\n" +
		"\tt.Run(`S-U99 typo`, func(t *testing.T) {})\n" +
		"}\n"
	if err := os.WriteFile(filepath.Join(dir, "a_test.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	units, err := FindUnitTests(root, "m/", map[string][]string{"m/controllers/a": {"TestOne"}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range units {
		names = append(names, u.Func+" "+u.Name+" "+strings.Join(u.IDs, ","))
	}
	if want := []string{"(package level) S-U2_from_a_table S-U2", "TestOne D-U1_compiles D-U1", "TestOne S-U99 typo S-U99"}; !reflect.DeepEqual(names, want) {
		t.Errorf("unit tests %q, want %q", names, want)
	}
	if _, err := FindUnitTests(root, "m/", map[string][]string{"other/x": {"TestX"}}); err == nil {
		t.Errorf("a package outside the module was accepted")
	}

	plan := smallPlan("D-U1", "D-U3", "D-I2", "S-P1", "S-U2")
	specs := []Spec{{Text: "creates", IDs: []string{"D-I2"}}, {Text: "gate", IDs: []string{"S-P1"}, Disruptive: true}}
	cov, unknown := CheckCoverage(plan, specs, units)
	var missing, vendor []string
	for _, c := range cov {
		if len(c.Specs) == 0 && len(c.UnitTests) == 0 {
			missing = append(missing, c.Item.ID)
		}
		if c.HasVendorSpec() {
			vendor = append(vendor, c.Item.ID)
		}
	}
	if !reflect.DeepEqual(missing, []string{"D-U3"}) || !reflect.DeepEqual(vendor, []string{"D-I2"}) {
		t.Errorf("missing %v (want D-U3), with a non-Disruptive spec %v (want D-I2)", missing, vendor)
	}
	if len(unknown) != 1 || len(unknown["S-U99"]) != 1 {
		t.Errorf("unknown = %v, want S-U99", unknown)
	}
}
