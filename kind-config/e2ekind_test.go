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
// docker, and expects exit code 2 within seconds, with a message that says
// what is missing and how to get it. Without a running engine it would
// install one with apt-get as root: a PATH without apt-get (and without
// podman) leaves it nothing to use.
func TestE2EKindFailsEarlyWithoutDockerOrKind(t *testing.T) {
	for _, tc := range []struct {
		name   string
		docker string // fake docker script; empty: none
		goTool bool   // go on PATH
		want   string
	}{
		{"no go", "", false, "go not found in PATH"},
		{"no docker and no apt-get", "", true, "missing apt-get"},
		{"docker daemon down and no apt-get", "#!/bin/sh\nexit 1\n", true, "missing apt-get"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tools := []string{"bash", "dirname", "cat", "date"}
			if tc.goTool {
				tools = append(tools, "go")
			}
			bin := fakePath(t, tc.docker, tools...)
			cmd := exec.Command(filepath.Join(bin, "bash"), "../hack/e2e-kind.sh")
			cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir(), "ARTIFACTS=" + t.TempDir(), "OUTPUT_DIR=" + t.TempDir()}
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 2 {
				t.Fatalf("exit: %v, want exit code 2\n%s", err, out)
			}
			for _, want := range []string{tc.want, "sigs.k8s.io/kind@v0.33.0", "'make e2e' needs neither"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestContainerEngineCheck runs `hack/container-engine.sh check`, which
// .ci/run uses to decide whether the kind smoke runs: with no engine and
// nothing to install one with, it must fail, saying what is missing, and
// start nothing; with a (fake) running Docker it must succeed.
func TestContainerEngineCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		docker string // fake docker script; empty: none
		wantOK bool
		want   string
	}{
		{"no engine and no apt-get", "", false, "missing apt-get"},
		{"docker daemon down and no apt-get", "#!/bin/sh\nexit 1\n", false, "missing apt-get"},
		{"docker running", "#!/bin/sh\nexit 0\n", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := fakePath(t, tc.docker, "bash", "dirname")
			cmd := exec.Command(filepath.Join(bin, "bash"), "../hack/container-engine.sh", "check")
			cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir(), "OUTPUT_DIR=" + t.TempDir()}
			out, err := cmd.CombinedOutput()
			if tc.wantOK {
				if err != nil {
					t.Fatalf("check failed with a running Docker: %v\n%s", err, out)
				}
				return
			}
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("exit: %v, want exit code 1\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
		})
	}
}

// fakePath is a PATH directory holding only the given tools of this machine
// (the test skips when one is missing) and, unless docker is empty, a fake
// docker with that script.
func fakePath(t *testing.T, docker string, tools ...string) string {
	t.Helper()
	bin := t.TempDir()
	for _, tool := range tools {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s not on this machine", tool)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	if docker != "" {
		if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(docker), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}
