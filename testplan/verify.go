package testplan

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/onsi/ginkgo/v2/types"
)

// make verify: which plan ids have a test at all, found in seconds and
// without a cluster. The specs come from a Ginkgo dry run of the compiled
// e2e suite; the unit tests from the test list (go test -list) of the
// reference implementation, whose subtests (named after ids, "S-U1_...")
// are found statically in the listed packages' test files, since -list
// prints only top-level tests.

// Spec is one Ginkgo spec as the dry run lists it.
type Spec struct {
	Text       string
	Labels     []string
	IDs        []string
	Disruptive bool
}

// ReadGinkgoDryRun reads the JSON report (--ginkgo.json-report) of a
// --ginkgo.dry-run of the suite: every spec the suite registers, with its
// labels. Pending specs are not tests and are left out.
func ReadGinkgoDryRun(path string) ([]Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var reports []types.Report
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, fmt.Errorf("%s: not a Ginkgo JSON report: %w", path, err)
	}
	var out []Spec
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if s.LeafNodeType != types.NodeTypeIt || s.State == types.SpecStatePending {
				continue
			}
			labels := s.Labels()
			sp := Spec{Text: s.FullText(), Labels: labels, IDs: IDsIn(s.FullText())}
			for _, l := range labels {
				sp.IDs = appendUnique(sp.IDs, IDsIn(l)...)
				sp.Disruptive = sp.Disruptive || l == "Disruptive"
			}
			out = append(out, sp)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: the dry run listed no specs", path)
	}
	return out, nil
}

// ReadGoTestList reads the top-level tests of each package, one
// "<import path> <test name>" per line: what `go test -list .` prints, with
// the package in front (make verify runs the cached test binaries with
// -test.list, which is what go test -list does, without relinking them).
func ReadGoTestList(r io.Reader) (map[string][]string, error) {
	tests := map[string][]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		pkg, name, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if ok && topLevelTest.MatchString(name) {
			tests[pkg] = append(tests[pkg], name)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(tests) == 0 {
		return nil, errors.New("the test list names no tests")
	}
	return tests, nil
}

var topLevelTest = regexp.MustCompile(`^(Test|Fuzz|Example)[A-Za-z0-9_]*$`)

// UnitTest is a test function of the reference and a subtest name in it
// that starts with a plan id.
type UnitTest struct {
	Package, Func, Name string
	IDs                 []string
}

// testNameID matches a test name that starts with an id: "S-U1_workload…",
// "D-V2 rejects…"; an id in the middle of a message is not a test name.
var testNameID = regexp.MustCompile(`^(` + IDPattern + `)(?:[ _/]|$)`)

// FindUnitTests finds, in the test files of each listed package, the string
// literals shaped like a test name that starts with an id. moduleRoot and
// modulePath map import paths to directories.
func FindUnitTests(moduleRoot, modulePath string, listed map[string][]string) ([]UnitTest, error) {
	var out []UnitTest
	pkgs := make([]string, 0, len(listed))
	for p := range listed {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		rel, ok := strings.CutPrefix(pkg, modulePath)
		if !ok {
			return nil, fmt.Errorf("package %s is not in module %s", pkg, modulePath)
		}
		found, err := unitTestsIn(pkg, filepath.Join(moduleRoot, filepath.FromSlash(rel)))
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}

func unitTestsIn(pkg, dir string) ([]UnitTest, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	var out []UnitTest
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, decl := range file.Decls {
			out = append(out, testNamesIn(pkg, decl)...)
		}
	}
	return out, nil
}

// messageCalls log or fail; a string they are given is a message, not a
// test name, even when it starts with an id.
var messageCalls = map[string]bool{
	"Error": true, "Errorf": true, "Fatal": true, "Fatalf": true, "Log": true, "Logf": true,
	"Skip": true, "Skipf": true, "Print": true, "Printf": true, "Println": true, "Fprintf": true, "New": true,
}

func testNamesIn(pkg string, decl ast.Decl) []UnitTest {
	fn := "(package level)"
	if fd, ok := decl.(*ast.FuncDecl); ok {
		fn = fd.Name.Name
	}
	var out []UnitTest
	messages := map[ast.Expr]bool{}
	ast.Inspect(decl, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && messageCalls[sel.Sel.Name] {
				for _, a := range n.Args {
					messages[a] = true
				}
			}
		case *ast.BasicLit:
			if n.Kind != token.STRING || messages[n] {
				break
			}
			if s, err := strconv.Unquote(n.Value); err == nil && testNameID.MatchString(s) {
				out = append(out, UnitTest{Package: pkg, Func: fn, Name: s, IDs: IDsIn(testNameID.FindString(s))})
			}
		}
		return true
	})
	return out
}

// Coverage is what claims one plan id.
type Coverage struct {
	Item      Item
	Specs     []Spec
	UnitTests []UnitTest
}

// HasVendorSpec reports whether a spec a vendor's default run executes
// (not Disruptive) carries the id.
func (c Coverage) HasVendorSpec() bool {
	for _, s := range c.Specs {
		if !s.Disruptive {
			return true
		}
	}
	return false
}

// CheckCoverage maps specs and unit tests onto the plan. It returns one
// Coverage per item in plan order, and the ids tests name that the plan
// lacks, each with the names that carry it.
func CheckCoverage(plan *Plan, specs []Spec, units []UnitTest) ([]Coverage, map[string][]string) {
	byID := map[string]*Coverage{}
	var cov []Coverage
	for _, it := range plan.Items {
		cov = append(cov, Coverage{Item: it})
	}
	for i := range cov {
		byID[cov[i].Item.ID] = &cov[i]
	}
	unknown := map[string][]string{}
	for _, s := range specs {
		for _, id := range s.IDs {
			if c := byID[id]; c != nil {
				c.Specs = append(c.Specs, s)
			} else {
				unknown[id] = append(unknown[id], s.Text)
			}
		}
	}
	for _, u := range units {
		for _, id := range u.IDs {
			if c := byID[id]; c != nil {
				c.UnitTests = append(c.UnitTests, u)
			} else {
				unknown[id] = append(unknown[id], u.Package+" "+u.Func+" "+strconv.Quote(u.Name))
			}
		}
	}
	return cov, unknown
}
