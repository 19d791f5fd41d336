package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/workload-aware/apps-harness/testplan"
)

// verifyCmd checks that every plan id has a test: a spec of the e2e suite
// (from a Ginkgo dry run) or a unit test of the reference implementation
// (from go test -list). It runs no test and needs no cluster.
func verifyCmd(args []string) int {
	fs := flag.NewFlagSet("testplan-report verify", flag.ContinueOnError)
	specsPath := fs.String("specs", "", "JSON report of a dry run of the e2e suite (e2e.test --ginkgo.dry-run --ginkgo.json-report=FILE)")
	unitList := fs.String("unit-list", "", "the reference implementation's top-level tests, one \"<import path> <test>\" per line (go test -list .)")
	root := fs.String("module-root", ".", "directory of go.mod, where the listed packages' test files are read")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *specsPath == "" || *unitList == "" || fs.NArg() > 0 {
		return fail("verify: usage: verify --specs FILE --unit-list FILE [--module-root DIR]")
	}
	cov, unknown, err := coverage(*specsPath, *unitList, *root)
	if err != nil {
		return fail("verify: %v", err)
	}
	return printCoverage(cov, unknown)
}

func coverage(specsPath, unitListPath, root string) ([]testplan.Coverage, map[string][]string, error) {
	plan, err := testplan.Load()
	if err != nil {
		return nil, nil, err
	}
	specs, err := testplan.ReadGinkgoDryRun(specsPath)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(unitListPath)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	listed, err := testplan.ReadGoTestList(f)
	if err != nil {
		return nil, nil, err
	}
	module, err := modulePath(root)
	if err != nil {
		return nil, nil, err
	}
	units, err := testplan.FindUnitTests(root, module, listed)
	if err != nil {
		return nil, nil, err
	}
	cov, unknown := testplan.CheckCoverage(plan, specs, units)
	return cov, unknown, nil
}

// printCoverage prints one line of totals, then what is wrong; it returns 1
// when an id has no test or a test names an id the plan lacks.
func printCoverage(cov []testplan.Coverage, unknown map[string][]string) int {
	var withSpec, withVendorSpec, withUnit int
	var missing, noVendorSpec []string
	for _, c := range cov {
		if len(c.Specs) > 0 {
			withSpec++
		}
		if c.HasVendorSpec() {
			withVendorSpec++
		} else {
			noVendorSpec = append(noVendorSpec, c.Item.ID)
		}
		if len(c.UnitTests) > 0 {
			withUnit++
		}
		if len(c.Specs) == 0 && len(c.UnitTests) == 0 {
			missing = append(missing, c.Item.ID)
		}
	}
	fmt.Printf("verify: %d plan ids; %d have a spec (%d a non-Disruptive one), %d a unit test of the reference implementation\n",
		len(cov), withSpec, withVendorSpec, withUnit)
	fmt.Printf("verify: ids no spec of a default vendor run (!Disruptive) carries (%d): %s\n", len(noVendorSpec), strings.Join(noVendorSpec, " "))
	rc := 0
	for _, id := range missing {
		fmt.Printf("MISSING %s: no spec in the dry run of the e2e suite and no unit test of the reference names it\n", id)
		rc = 1
	}
	for id, names := range unknown {
		fmt.Printf("UNKNOWN %s: named by %s, but not in testplan/testplan.yaml\n", id, strings.Join(names, "; "))
		rc = 1
	}
	if rc == 0 {
		fmt.Println("verify: every plan id has a test")
	}
	return rc
}

// modulePath reads the module path from root/go.mod.
func modulePath(root string) (string, error) {
	f, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`), nil
		}
	}
	return "", fmt.Errorf("%s/go.mod has no module line", root)
}
