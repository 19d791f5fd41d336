package testplan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// A unit.json is evidence for a run only when it belongs to that run: the
// stamp `make test` writes beside it says from which source tree and when.
// Without this, a unit.json left in $ARTIFACTS by another commit or another
// day would decide ids in a report about a different cluster.

// Stamp records where a go test -json stream came from.
type Stamp struct {
	// Source identifies the source tree the tests were built from (SourceID).
	Source string `json:"source"`
	// Commit is the git commit of Source, for people reading the file.
	Commit   string    `json:"commit"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// SHA256 is the digest of the stamped file: a file changed afterwards
	// is not the one the stamp speaks for.
	SHA256 string `json:"sha256"`
}

// StampPath is where the stamp of a result file lives: unit.json ->
// unit.stamp.json (make test), junit_e2e.xml -> junit_e2e.stamp.json
// (hack/e2e.sh).
func StampPath(file string) string {
	return strings.TrimSuffix(file, filepath.Ext(file)) + ".stamp.json"
}

// WriteStamp stamps unitJSON as written from source, by a test run that
// started at started and finished now.
func WriteStamp(unitJSON, source string, started time.Time) error {
	sum, err := fileSHA256(unitJSON)
	if err != nil {
		return err
	}
	st := Stamp{Source: source, Commit: commitOf(source), Started: started.UTC(), Finished: time.Now().UTC(), SHA256: sum}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(StampPath(unitJSON), append(data, '\n'), 0o644)
}

// ReadStamp reads the stamp of unitJSON.
func ReadStamp(unitJSON string) (*Stamp, error) {
	data, err := os.ReadFile(StampPath(unitJSON))
	if err != nil {
		return nil, err
	}
	var st Stamp
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", StampPath(unitJSON), err)
	}
	return &st, nil
}

// Run identifies one run of the harness: the source tree it tests and when
// it started (make exports RUN_STARTED once per invocation; .ci/run once for
// the whole CI job).
type Run struct {
	Source  string
	Started time.Time
}

// CheckFresh returns the stamp of unitJSON when the file belongs to run:
// stamped from run's source tree, by tests started no earlier than the run,
// and unchanged since. Otherwise the error says why in a sentence the
// report can show.
func (run Run) CheckFresh(unitJSON string) (*Stamp, error) {
	st, err := ReadStamp(unitJSON)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("no stamp %s beside it, so nothing says which source tree or run wrote it (make test and hack/e2e.sh write a stamp beside what they write)", filepath.Base(StampPath(unitJSON)))
	case err != nil:
		return nil, err
	case run.Source == "" || st.Source == "" || st.Source != run.Source: // an unknown source matches nothing
		return st, fmt.Errorf("written from source %s, this run tests %s", orUnknown(st.Source), orUnknown(run.Source))
	case st.Started.Before(run.Started):
		return st, fmt.Errorf("written by an earlier run (tests started %s, this run started %s)", st.Started.UTC().Format(time.RFC3339), run.Started.UTC().Format(time.RFC3339))
	}
	sum, err := fileSHA256(unitJSON)
	if err != nil {
		return st, err
	}
	if sum != st.SHA256 {
		return st, fmt.Errorf("changed after %s was written", filepath.Base(StampPath(unitJSON)))
	}
	return st, nil
}

func fileSHA256(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// SourceID identifies the source tree in dir: the HEAD commit, followed by
// "+dirty." and a digest of the uncommitted changes (tracked and untracked,
// ignored files excepted) when there are any, so two runs agree exactly when
// they test the same code. Where git cannot tell (no .git, no git, a
// repository git refuses as not owned by the user), it is "tree." and a
// digest of every file outside hidden and "_" directories.
func SourceID(dir string) (string, error) {
	id, gitErr := gitSourceID(dir)
	if gitErr == nil {
		return id, nil
	}
	id, err := treeDigest(dir)
	if err != nil {
		return "", fmt.Errorf("%v; and without git: %v", gitErr, err)
	}
	return id, nil
}

func gitSourceID(dir string) (string, error) {
	commit, err := git(dir, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	diff, err := git(dir, "diff", "HEAD", "--binary")
	if err != nil {
		return "", err
	}
	untracked, err := git(dir, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return "", err
	}
	commit = strings.TrimSpace(commit)
	if diff == "" && untracked == "" {
		return commit, nil
	}
	h := sha256.New()
	h.Write([]byte(diff))
	for _, name := range strings.Split(untracked, "\x00") {
		if name == "" {
			continue
		}
		content, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) { // deleted meanwhile: its name still counts
			return "", err
		}
		fmt.Fprintf(h, "\x00%s\x00%d\x00", name, len(content))
		h.Write(content)
	}
	return commit + "+dirty." + hex.EncodeToString(h.Sum(nil))[:12], nil
}

// treeDigest hashes the names and contents of the files under dir, leaving
// out hidden directories (.git) and those starting with "_" (_output,
// _artifacts: what the runs write).
func treeDigest(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != dir && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		content, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(h, "\x00%s\x00%d\x00", filepath.ToSlash(rel), len(content))
		h.Write(content)
		return nil
	})
	if err != nil {
		return "", err
	}
	return "tree." + hex.EncodeToString(h.Sum(nil))[:12], nil
}

func commitOf(source string) string {
	commit, _, _ := strings.Cut(source, "+")
	return commit
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
