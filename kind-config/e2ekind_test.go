package kindconfig

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2EKindFailsEarlyWithoutDockerOrKind runs hack/e2e-kind.sh with a PATH
// that holds only the few tools it needs before its checks, plus fakes of
// docker, and expects exit code 2 with a message that says what is missing
// and how to get it.
func TestE2EKindFailsEarlyWithoutDockerOrKind(t *testing.T) {
	for _, tc := range []struct {
		name   string
		docker string // fake docker script; empty: none
		want   string
	}{
		{"no docker", "", "docker not found in PATH"},
		{"docker daemon down", "#!/bin/sh\nexit 1\n", "'docker info' fails"},
		{"no kind", "#!/bin/sh\nexit 0\n", "kind not found in PATH"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			for _, tool := range []string{"bash", "dirname", "cat", "date"} {
				p, err := exec.LookPath(tool)
				if err != nil {
					t.Skipf("%s not on this machine", tool)
				}
				if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.docker != "" {
				if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(tc.docker), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(filepath.Join(bin, "bash"), "../hack/e2e-kind.sh")
			cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir(), "ARTIFACTS=" + t.TempDir(), "OUTPUT_DIR=" + t.TempDir()}
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 2 {
				t.Fatalf("exit: %v, want exit code 2\n%s", err, out)
			}
			for _, want := range []string{tc.want, "go install sigs.k8s.io/kind@v0.33.0", "'make e2e' needs neither"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}
