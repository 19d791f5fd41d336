package framework

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveHookCommand(t *testing.T) {
	for _, tc := range []struct{ command, dir, want string }{
		// A relative path with a slash: against dir, arguments kept.
		{"hack/reconfigure-local.sh", "/src/harness", "/src/harness/hack/reconfigure-local.sh"},
		{"hack/controller-restart-local.sh --verbose", "/src/harness", "/src/harness/hack/controller-restart-local.sh --verbose"},
		{"  ./hook.sh", "/home/v", "/home/v/hook.sh"},
		{"../hooks/kind.sh x", "/home/v/harness", "/home/v/hooks/kind.sh x"},
		// A directory sh would split is quoted.
		{"hack/hook.sh", "/My Projects/h", "'/My Projects/h/hack/hook.sh'"},
		// Left as given: absolute paths, names on PATH, shell syntax, nothing.
		{"/opt/hooks/reconfigure.sh", "/src", "/opt/hooks/reconfigure.sh"},
		{"my-reconfigure-hook kind", "/src", "my-reconfigure-hook kind"},
		{"NODE_EXEC=ssh hack/hook.sh", "/src", "NODE_EXEC=ssh hack/hook.sh"},
		{"$HOME/hook.sh", "/src", "$HOME/hook.sh"},
		{"~/hook.sh", "/src", "~/hook.sh"},
		{`"hack/my hook.sh"`, "/src", `"hack/my hook.sh"`},
		{"", "/src", ""},
	} {
		if got := ResolveHookCommand(tc.command, tc.dir); got != tc.want {
			t.Errorf("ResolveHookCommand(%q, %q) = %q, want %q", tc.command, tc.dir, got, tc.want)
		}
	}
	// No dir: the working directory, as sh would have it.
	wd, _ := os.Getwd()
	if got, want := ResolveHookCommand("hack/x.sh", ""), filepath.Join(wd, "hack/x.sh"); got != want {
		t.Errorf("ResolveHookCommand with no dir = %q, want %q", got, want)
	}
}

// hookDir is a directory with hooks/ as a vendor's checkout could have it;
// log records each call of hooks/ok.sh as "verb|$#|$WAS_COMPONENT|$WAS_CONTROLLER_ACTION",
// the verb from $1 or, for a bare path that `sh -c` passes no arguments, the environment.
func hookDir(t *testing.T) (dir, log string) {
	t.Helper()
	dir = t.TempDir()
	log = filepath.Join(dir, "calls")
	if err := os.Mkdir(filepath.Join(dir, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, "hooks", name), []byte("#!/bin/sh\n"+body), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("ok.sh", `verb=${1:-${WAS_COMPONENT:-$WAS_CONTROLLER_ACTION}}
echo "$verb|$#|$WAS_COMPONENT|$WAS_CONTROLLER_ACTION" >> `+log+`
[ "$verb" = check ] || exit 9
`, 0o755)
	write("noexec.sh", "exit 0\n", 0o644)
	write("three.sh", "for i in 1 2 3 4 5 6 7 8 9 10 11; do echo \"noise $i\"; done\necho 'cannot reach node kind-control-plane' >&2\nexit 3\n", 0o755)
	return dir, log
}

// Given as relative paths, the hooks are found from the test's working
// directory (this package's), which is not where they are: resolution, not
// the working directory, finds them. A hook that was not given is not run.
func TestCheckHooksRunsGivenHooksOnce(t *testing.T) {
	dir, log := hookDir(t)
	cfg := Config{ReconfigureCommand: "hooks/ok.sh", HookDir: dir}
	if err := CheckHooks(context.Background(), cfg.Hooks()); err != nil {
		t.Fatalf("a hook that answers check: %v", err)
	}
	got, _ := os.ReadFile(log)
	if want := "check|0|check|\n"; string(got) != want {
		t.Fatalf("calls with only --reconfigure-command given:\n%q\nwant %q", got, want)
	}
	cfg.ControllerRestartCommand = "hooks/ok.sh"
	if err := CheckHooks(context.Background(), cfg.Hooks()); err != nil {
		t.Fatalf("two hooks that answer check: %v", err)
	}
	got, _ = os.ReadFile(log)
	if want := "check|0|check|\ncheck|0|check|\ncheck|0||check\n"; string(got) != want {
		t.Fatalf("calls:\n%q\nwant %q", got, want)
	}
	// A command that passes its arguments on gets the verb in the
	// component's place, with every setting empty.
	if err := CheckHooks(context.Background(), (&Config{ReconfigureCommand: `hooks/ok.sh "$@"`, HookDir: dir}).Hooks()); err != nil {
		t.Fatal(err)
	}
	got, _ = os.ReadFile(log)
	if want := "check|5|check|\n"; !strings.HasSuffix(string(got), want) {
		t.Fatalf("calls:\n%q\nwant the last %q", got, want)
	}
	// Names on PATH and absolute paths run as given.
	cfg = Config{ReconfigureCommand: "true", ControllerRestartCommand: filepath.Join(dir, "hooks/ok.sh"), HookDir: "/nonexistent"}
	if err := CheckHooks(context.Background(), cfg.Hooks()); err != nil {
		t.Fatalf("a name on PATH and an absolute path: %v", err)
	}
}

func TestCheckHooksFailsClearly(t *testing.T) {
	dir, _ := hookDir(t)
	for _, tc := range []struct {
		name, given string
		want        []string
		notWant     string
	}{
		{"missing", "hooks/missing.sh", []string{"no such file", "exit status 127", "not found"}, ""},
		{"not executable", "hooks/noexec.sh", []string{"not executable (chmod +x " + filepath.Join(dir, "hooks/noexec.sh"), "exit status 126"}, ""},
		// Only the output's last lines: the first noise lines are left out.
		{"exits 3", "hooks/three.sh", []string{"exit status 3", "cannot reach node kind-control-plane", "noise 11"}, "noise 1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{ReconfigureCommand: tc.given, HookDir: dir}
			err := CheckHooks(context.Background(), cfg.Hooks())
			if err == nil {
				t.Fatal("CheckHooks passed a hook that cannot run")
			}
			msg := err.Error()
			for _, want := range append([]string{
				"--reconfigure-command", "RECONFIGURE_COMMAND", `"` + tc.given + `"`, // the flag, env var and command as given
				"resolved against " + dir, "to " + filepath.Join(dir, tc.given), // the resolved path
				"fix: ", // and what to do
			}, tc.want...) {
				if !strings.Contains(msg, want) {
					t.Errorf("the error lacks %q:\n%s", want, msg)
				}
			}
			if tc.notWant != "" && strings.Contains(msg, tc.notWant) {
				t.Errorf("the error has %q, more than the last lines:\n%s", tc.notWant, msg)
			}
			if strings.Contains(msg, "--controller-restart-command") {
				t.Errorf("the error names a hook that was not given:\n%s", msg)
			}
		})
	}
	// Both hooks failing: one error naming both.
	cfg := Config{ReconfigureCommand: "hooks/missing.sh", ControllerRestartCommand: "hooks/three.sh", HookDir: dir}
	err := CheckHooks(context.Background(), cfg.Hooks())
	if err == nil || strings.Count(err.Error(), "cannot run, so no spec runs") != 1 ||
		!strings.Contains(err.Error(), "RECONFIGURE_COMMAND") || !strings.Contains(err.Error(), "CONTROLLER_RESTART_COMMAND") {
		t.Fatalf("two hooks that cannot run: want one error naming both, got %v", err)
	}
}

// The suite's own calls run the resolved command too, not only the check.
func TestHookRelativePathRuns(t *testing.T) {
	dir, log := hookDir(t)
	saved := TestContext
	t.Cleanup(func() { TestContext = saved })
	TestContext.ReconfigureCommand, TestContext.HookDir = "hooks/ok.sh", dir
	// ok.sh exits 9 on anything but check; its log line is what proves it ran.
	err := runHook(context.Background(), ReferenceControllerManager, hookSettings{ComponentConfig: GateOn(WorkloadWithDeployment, false, ReferenceControllerManager)[0].ComponentConfig})
	if err == nil || !strings.Contains(err.Error(), "exit status 9") {
		t.Fatalf("runHook through a relative path: want ok.sh's own exit status 9, got %v", err)
	}
	got, _ := os.ReadFile(log)
	if want := "implementation-controllers|0|implementation-controllers|\n"; string(got) != want {
		t.Fatalf("calls: %q, want %q", got, want)
	}
}

// The fault hook is checked like the others (its verb in the action's place,
// an empty target), and asked `check <action>` once per action before the
// first spec that needs it: a failure there skips those specs, not the run.
func TestFaultHookCheck(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	hook := filepath.Join(dir, "fault.sh")
	if err := os.WriteFile(hook, []byte(`#!/bin/sh
echo "$#|$1|$2|$WAS_FAULT_ACTION|$WAS_FAULT_TARGET" >> `+log+`
[ "$1" = check ] || exit 9
[ "$2" != compact-etcd ] || { echo 'no etcdctl in the etcd image' >&2; exit 1; }
`), 0o755); err != nil {
		t.Fatal(err)
	}
	saved := TestContext
	t.Cleanup(func() { TestContext = saved; faultChecks.Clear() })
	TestContext.FaultCommand, TestContext.HookDir = `"$WAS_FAULT_HOOK" "$@"`, dir
	t.Setenv("WAS_FAULT_HOOK", hook)
	if err := CheckHooks(context.Background(), TestContext.Hooks()); err != nil {
		t.Fatalf("a fault hook that answers check: %v", err)
	}
	if why := faultCannot(context.Background(), FaultRestart); why != "" {
		t.Fatalf("restart: %s", why)
	}
	why := faultCannot(context.Background(), FaultCompactEtcd)
	for _, want := range []string{`cannot do "compact-etcd"`, "--fault-command", "no etcdctl in the etcd image", "check compact-etcd"} {
		if !strings.Contains(why, want) {
			t.Errorf("compact-etcd's refusal lacks %q:\n%s", want, why)
		}
	}
	// Asked once per action.
	_ = faultCannot(context.Background(), FaultCompactEtcd)
	got, _ := os.ReadFile(log)
	if want := "2|check||check|\n2|check|restart|check|restart\n2|check|compact-etcd|check|compact-etcd\n"; string(got) != want {
		t.Fatalf("calls:\n%q\nwant %q", got, want)
	}
	// Without the hook, the reason names it.
	TestContext.FaultCommand = ""
	if why := faultCannot(context.Background(), FaultStopNode); !strings.Contains(why, "FAULT_COMMAND") || !strings.Contains(why, "hack/hooks/kubeadm/fault.sh") {
		t.Fatalf("no fault hook: %q", why)
	}
}
