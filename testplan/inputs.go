package testplan

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// InputState says what became of an input file.
type InputState string

const (
	InputNotGiven InputState = "not given"
	InputNotFound InputState = "file not found"
	// InputIgnored: the file exists but does not belong to this run.
	InputIgnored InputState = "ignored"
	InputRead    InputState = "read"
)

// Input describes one input file of the report.
type Input struct {
	Source Source
	Path   string
	State  InputState
	// Note says on what terms the file was read, or why it was ignored.
	Note string
	// Tests is the number of results read from the file.
	Tests int
}

// Used reports whether the input contributed results.
func (in Input) Used() bool { return in.State == InputRead }

// UnitJSON names the go test -json stream to read and on what terms.
type UnitJSON struct {
	Path string
	// Explicit: the caller named the file on purpose (--unit-json); it is
	// read whatever its stamp says.
	Explicit bool
	// Run is the run the file must belong to when it is not Explicit.
	Run Run
}

// JUnitInput names the Ginkgo JUnit file and on what terms it is read.
type JUnitInput struct {
	Path string
	// Run, when set, is the run the file must belong to: its stamp
	// (hack/e2e.sh writes junit_e2e.stamp.json) must name Run's source tree
	// and a suite start no earlier than Run's (Run.CheckFresh). A JUnit of
	// another run is ignored, so it cannot make any id PASS. Nil: the file
	// is read as given (a report run by hand, the Sonobuoy plugin).
	Run *Run
}

// ReadInputs reads the Ginkgo JUnit file as given and the go test -json file
// (see ReadInputsOf).
func ReadInputs(junitPath string, unit UnitJSON) ([]TestResult, []Input, error) {
	return ReadInputsOf(JUnitInput{Path: junitPath}, unit)
}

// ReadInputsOf reads the Ginkgo JUnit file and the go test -json file. A
// path that is empty or names a file that does not exist is recorded as such
// and contributes nothing, and so does a file that does not belong to the
// run (see Run.CheckFresh); a file that exists but cannot be parsed is an
// error naming the file.
func ReadInputsOf(junitIn JUnitInput, unit UnitJSON) ([]TestResult, []Input, error) {
	junit, junitInput, err := readJUnit(junitIn)
	if err != nil {
		return nil, nil, err
	}
	units, unitIn, err := readUnitJSON(unit)
	if err != nil {
		return nil, nil, err
	}
	return append(junit, units...), []Input{junitInput, unitIn}, nil
}

// readJUnit reads the JUnit file if it belongs to the run (when one is given).
func readJUnit(j JUnitInput) ([]TestResult, Input, error) {
	in := Input{Source: SourceJUnit, Path: j.Path, State: InputNotGiven}
	if j.Path == "" {
		return nil, in, nil
	}
	if _, err := os.Stat(j.Path); errors.Is(err, fs.ErrNotExist) {
		in.State = InputNotFound
		return nil, in, nil
	}
	note := "read as given: no run to check its stamp against (--run-started)"
	if j.Run != nil {
		st, err := j.Run.CheckFresh(j.Path)
		if err != nil {
			in.State, in.Note = InputIgnored, err.Error()
			return nil, in, nil
		}
		note = fmt.Sprintf("stamped by hack/e2e.sh of this run (source %s, suite started %s)", st.Source, st.Started.UTC().Format(time.RFC3339))
	}
	res, in, err := readInput(SourceJUnit, j.Path, ReadJUnit)
	in.Note = note
	return res, in, err
}

// readUnitJSON reads the go test -json stream if it is given explicitly or
// belongs to the run.
func readUnitJSON(unit UnitJSON) ([]TestResult, Input, error) {
	in := Input{Source: SourceGoTest, Path: unit.Path, State: InputNotGiven}
	if unit.Path == "" {
		return nil, in, nil
	}
	if _, err := os.Stat(unit.Path); errors.Is(err, fs.ErrNotExist) {
		in.State = InputNotFound
		return nil, in, nil
	}
	var note string
	if unit.Explicit {
		note = "given explicitly, so read without checking that it belongs to this run"
		if st, err := ReadStamp(unit.Path); err == nil {
			note += fmt.Sprintf(" (its stamp: source %s, tests started %s)", st.Source, st.Started.UTC().Format(time.RFC3339))
		}
	} else {
		st, err := unit.Run.CheckFresh(unit.Path)
		if err != nil {
			in.State, in.Note = InputIgnored, err.Error()
			return nil, in, nil
		}
		note = fmt.Sprintf("stamped by make test of this run (source %s, tests started %s)", st.Source, st.Started.UTC().Format(time.RFC3339))
	}
	res, in, err := readInput(SourceGoTest, unit.Path, ReadGoTestJSON)
	in.Note = note
	return res, in, err
}

func readInput(src Source, path string, read func(string) ([]TestResult, error)) ([]TestResult, Input, error) {
	in := Input{Source: src, Path: path, State: InputNotGiven}
	if path == "" {
		return nil, in, nil
	}
	res, err := read(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		in.State = InputNotFound
		return nil, in, nil
	case err != nil:
		return nil, in, err
	}
	in.State, in.Tests = InputRead, len(res)
	return res, in, nil
}
