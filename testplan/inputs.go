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

// ReadInputs reads the Ginkgo JUnit file and the go test -json file. A path
// that is empty or names a file that does not exist is recorded as such and
// contributes nothing, and so does a unit.json that does not belong to the
// run (see Run.CheckFresh); a file that exists but cannot be parsed is an
// error naming the file.
func ReadInputs(junitPath string, unit UnitJSON) ([]TestResult, []Input, error) {
	junit, junitIn, err := readInput(SourceJUnit, junitPath, ReadJUnit)
	if err != nil {
		return nil, nil, err
	}
	units, unitIn, err := readUnitJSON(unit)
	if err != nil {
		return nil, nil, err
	}
	return append(junit, units...), []Input{junitIn, unitIn}, nil
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
