package main

import (
	"flag"
	"io"
	"maps"
	"testing"
)

func TestExtraArgs(t *testing.T) {
	parse := func(argv ...string) (extraArgs, error) {
		fs := flag.NewFlagSet("restart", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		a := extraArgs{}
		fs.Var(a, "arg", "")
		return a, fs.Parse(argv)
	}
	got, err := parse("--arg", "controllers=", "--arg=v=4", "--arg", "--leader-elect=a,b")
	if err != nil {
		t.Fatal(err)
	}
	want := extraArgs{"controllers": "", "v": "4", "leader-elect": "a,b"}
	if !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if s := got.String(); s != "controllers= leader-elect=a,b v=4" {
		t.Errorf("String() = %q", s)
	}
	for _, bad := range []string{"controllers", "=x", "feature-gates=A=true", "runtime-config=x=false"} {
		if _, err := parse("--arg", bad); err == nil {
			t.Errorf("--arg %q was accepted", bad)
		}
	}
}
