package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/workload-aware/apps-harness/pkg/flakes"
)

// flakesCmd aggregates the JUnit reports of repeated runs (make stress) into
// a flake-rate table; it exits non-zero when any spec failed in any run.
func flakesCmd(args []string) error {
	fs := flag.NewFlagSet("flakes", flag.ContinueOnError)
	out := fs.String("out", "", "Markdown file to write (default: stdout only)")
	title := fs.String("title", "Flake rate per spec", "heading of the table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("flakes: give the JUnit reports of the runs")
	}
	t := flakes.Read(fs.Args())
	var b bytes.Buffer
	if err := t.WriteMarkdown(&b, *title); err != nil {
		return err
	}
	if *out != "" {
		if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	_, _ = os.Stdout.Write(b.Bytes())
	if t.Failed() {
		return fmt.Errorf("flakes: at least one spec failed in at least one of %d runs", t.Reports)
	}
	return nil
}
