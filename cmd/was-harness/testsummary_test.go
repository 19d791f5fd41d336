package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTestSummary(t *testing.T) {
	stream := `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:3: wrong\n"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"run","Package":"p","Test":"TestC"}
{"Action":"skip","Package":"p","Test":"TestC"}
{"Action":"fail","Package":"p"}
{"ImportPath":"q [q.test]","Action":"build-output","Output":"q/q_test.go:1: syntax error\n"}
{"Action":"fail","Package":"q","FailedBuild":"q [q.test]"}
`
	path := filepath.Join(t.TempDir(), "unit.json")
	if err := os.WriteFile(path, []byte(stream), 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	err := testSummary(path, &b)
	if err == nil {
		t.Errorf("no error with failures")
	}
	out := b.String()
	for _, s := range []string{"--- FAIL p TestB\n    b_test.go:3: wrong\n", "--- FAIL package q: build failed: q/q_test.go:1: syntax error", "unit: 1 passed, 2 failed, 1 skipped\n"} {
		if !strings.Contains(out, s) {
			t.Errorf("summary lacks %q:\n%s", s, out)
		}
	}
	if err := os.WriteFile(path, []byte(stream[:strings.Index(stream, `{"Action":"run","Package":"p","Test":"TestB"}`)]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := testSummary(path, &b); err != nil {
		t.Errorf("only passes: %v", err)
	}
}
