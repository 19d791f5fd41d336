package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/workload-aware/apps-harness/pkg/parity"
)

// parityReportCmd writes parity.md from the run directories of
// hack/parity.sh and fails when a spec regresses against the baseline or
// an object with intent lacks the Workload or PodGroups the KEPs require.
//
//	was-harness parity-report --out parity.md [--title T] [--baseline DIR] MODE=DIR...
func parityReportCmd(args []string) error {
	fs := flag.NewFlagSet("parity-report", flag.ContinueOnError)
	out := fs.String("out", "", "the report to write (markdown)")
	title := fs.String("title", "Parity: Kubernetes' own sig-apps e2e specs", "the report's title")
	kepFile := fs.String("kep-requires", "hack/parity/kep-requires.txt", "the specs that fail with intent as a KEP requires, and how")
	baselineDir := fs.String("baseline", "", "the baseline run's directory (stock kube-controller-manager, no intent); empty: none, every failure counts")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() == 0 {
		return fmt.Errorf("usage: was-harness parity-report --out FILE [--baseline DIR] MODE=DIR...")
	}
	var baseline *parity.Run
	if *baselineDir != "" {
		b, err := parity.LoadRun("baseline", *baselineDir)
		if err != nil {
			return err
		}
		baseline = b
	}
	var runs []*parity.Run
	for _, a := range fs.Args() {
		mode, dir, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("%q: want MODE=DIR", a)
		}
		r, err := parity.LoadRun(mode, dir)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	kepRules, err := parity.LoadKEPRules(*kepFile)
	if err != nil {
		return err
	}
	v := parity.Compare(baseline, runs, kepRules)
	var buf bytes.Buffer
	parity.WriteMarkdown(&buf, *title, baseline, runs, v)
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if !v.OK() {
		for _, s := range append(v.Regressions, v.Missing...) {
			fmt.Fprintln(os.Stderr, "  "+s)
		}
		return fmt.Errorf("parity FAILED: %d regression(s), %d object(s) without the Workload or PodGroups the KEPs require; see %s", len(v.Regressions), len(v.Missing), *out)
	}
	fmt.Printf("parity PASSED; see %s\n", *out)
	return nil
}
