package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// make conformance's prerequisite check calls each hook given in the
// environment once, with check, before it even reads the kubeconfig: a hook
// given as a path relative to the directory make was called from
// (WAS_HOOK_DIR) that cannot do its job stops it with an error naming the
// variable, not 21 failed specs after a full run.
func TestConformanceCheckCallsHooksFirst(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "calls")
	hook := "#!/bin/sh\necho \"$WAS_COMPONENT$WAS_CONTROLLER_ACTION\" >> " + log + "\n"
	for name, body := range map[string]string{"ok.sh": hook, "broken.sh": hook + "echo 'no node to exec into' >&2; exit 3\n"} {
		if err := os.WriteFile(filepath.Join(dir, "hack", name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("WAS_HOOK_DIR", dir)
	t.Setenv("CONTROLLER_RESTART_COMMAND", "")
	t.Setenv("FAULT_COMMAND", "")
	kubeconfig := filepath.Join(dir, "no-such-kubeconfig")

	t.Setenv("RECONFIGURE_COMMAND", "hack/broken.sh")
	err := conformanceCmd([]string{"--check-only", "--kubeconfig", kubeconfig})
	if err == nil || !strings.Contains(err.Error(), "RECONFIGURE_COMMAND") || !strings.Contains(err.Error(), "exit status 3") ||
		!strings.Contains(err.Error(), "no node to exec into") || strings.Contains(err.Error(), "loading kubeconfig") {
		t.Fatalf("a hook that fails its check: want the hook's error before the kubeconfig is read, got %v", err)
	}

	// A hook that passes its check lets the check go on (to the kubeconfig,
	// which does not exist here).
	t.Setenv("RECONFIGURE_COMMAND", "hack/ok.sh")
	err = conformanceCmd([]string{"--check-only", "--kubeconfig", kubeconfig})
	if err == nil || !strings.Contains(err.Error(), "loading kubeconfig") {
		t.Fatalf("a hook that passes its check: want the kubeconfig's error next, got %v", err)
	}
	got, _ := os.ReadFile(log)
	if want := "check\ncheck\n"; string(got) != want {
		t.Fatalf("hook calls %q, want %q (once per check run)", got, want)
	}
}

// The hook's <version>: that version's binary from hack/build-binaries.sh,
// without this cluster's gates; a missing one names the build command.
func TestVersionBinary(t *testing.T) {
	out := t.TempDir()
	if _, _, err := versionBinary(out, "kube-controller-manager", "v1.36.3"); err == nil || !strings.Contains(err.Error(), "hack/build-binaries.sh") {
		t.Fatalf("missing binary: err = %v, want the build command", err)
	}
	bin := filepath.Join(out, "bin", "kube", "v1.36.3", "kube-controller-manager")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	got, omit, err := versionBinary(out, "kube-controller-manager", "v1.36.3")
	if err != nil || got != bin || !strings.Contains(omit, "GenericWorkload") {
		t.Errorf("versionBinary = %q, %q, %v; want %s without the cluster's gates", got, omit, err, bin)
	}
}
