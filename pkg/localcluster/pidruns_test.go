package localcluster

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPidRunsThroughSymlink: a component started from a binary reached
// through a symlinked directory (an _output linked from another checkout)
// is recognised, or `cluster down` would leave it running.
func TestPidRunsThroughSymlink(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	self, err = filepath.EvalSymlinks(self)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "linked")
	if err := os.Symlink(filepath.Dir(self), link); err != nil {
		t.Fatal(err)
	}
	pid := os.Getpid()
	if !pidRuns(pid, self) {
		t.Errorf("pidRuns(self, %s) = false", self)
	}
	if !pidRuns(pid, filepath.Join(link, filepath.Base(self))) {
		t.Errorf("pidRuns(self, through a symlinked directory) = false")
	}
	if pidRuns(pid, filepath.Join(filepath.Dir(self), "other-binary")) {
		t.Errorf("pidRuns(self, another binary) = true")
	}
}
