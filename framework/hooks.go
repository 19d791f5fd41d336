package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The vendor hooks (--reconfigure-command, --controller-restart-command,
// --fault-command) are shell commands the user gives. Two things make them fail late and many
// times over, once per spec that needs them, after a full run: a path the
// suite's process does not find (the ginkgo CLI runs the suite binary in
// another working directory than the user's shell), and a hook that cannot
// do its job on this cluster. So:
//
//   - a command whose first word is a relative path with a slash
//     ("hack/reconfigure-local.sh") is resolved against HookDir, the
//     directory `make` was called from (the Makefile exports WAS_HOOK_DIR);
//     plain names (looked up on PATH) and absolute paths stay as they are;
//   - before any spec, the prerequisite check runs each given hook once with
//     the verb "check", which must exit 0 and change nothing when the hook
//     can do its job, and stops with one error naming every hook that cannot.

// HookDirEnv is the environment variable (and --hook-dir the flag) naming
// the directory relative hook paths are resolved against.
const HookDirEnv = "WAS_HOOK_DIR"

// HookCheck is the verb of the harmless call: exit 0 without changing
// anything when the hook can do its job on this cluster, non-zero with a
// message saying what is missing otherwise.
const HookCheck = "check"

// HookCheckTimeout bounds the check call; it should only look, not wait.
const HookCheckTimeout = 2 * time.Minute

// Hook is one vendor hook as given and as the suite runs it.
type Hook struct {
	Flag  string // "--reconfigure-command"
	Env   string // "RECONFIGURE_COMMAND"
	Given string // the command as the user gave it; empty: not given
	// Command is Given with a relative first word made absolute against Dir.
	Command string
	Dir     string
	// path is that absolute first word, when Given's was relative.
	path string
	// checkArgs and checkEnv are how the check verb reaches the hook: in the
	// places its other verbs use (positional arguments and WAS_*).
	checkArgs []string
	checkEnv  []string
}

// ReconfigureHook is --reconfigure-command, resolved.
func (c *Config) ReconfigureHook() Hook {
	return newHook("--reconfigure-command", "RECONFIGURE_COMMAND", c.ReconfigureCommand, c.HookDir,
		// The verb takes the component's place, with every setting empty.
		[]string{HookCheck, "", "", "", ""}, []string{"WAS_COMPONENT=" + HookCheck, "WAS_FEATURE_GATES=", "WAS_RUNTIME_CONFIG=", "WAS_VERSION=", "WAS_ARGS="})
}

// ControllerRestartHook is --controller-restart-command, resolved.
func (c *Config) ControllerRestartHook() Hook {
	return newHook("--controller-restart-command", "CONTROLLER_RESTART_COMMAND", c.ControllerRestartCommand, c.HookDir,
		[]string{HookCheck}, []string{"WAS_CONTROLLER_ACTION=" + HookCheck})
}

// FaultHook is --fault-command, resolved (faults.go).
func (c *Config) FaultHook() Hook {
	return newHook("--fault-command", "FAULT_COMMAND", c.FaultCommand, c.HookDir,
		// The verb takes the action's place, with an empty target.
		[]string{HookCheck, ""}, []string{"WAS_FAULT_ACTION=" + HookCheck, "WAS_FAULT_TARGET="})
}

// Hooks are the three hooks, given or not (CheckHooks skips those not given).
func (c *Config) Hooks() []Hook {
	return []Hook{c.ReconfigureHook(), c.ControllerRestartHook(), c.FaultHook()}
}

func newHook(flag, env, given, dir string, args, envs []string) Hook {
	if dir == "" {
		dir, _ = os.Getwd()
	}
	command, path := resolveHookCommand(given, dir)
	return Hook{Flag: flag, Env: env, Given: given, Command: command, Dir: dir, path: path, checkArgs: args, checkEnv: envs}
}

// ResolveHookCommand makes the first word of command absolute against dir
// (the process's working directory when dir is empty) when it is a relative
// path containing a slash. Anything else stays as given: plain names are
// found on PATH by sh, absolute paths need nothing, and a first word with
// shell syntax (quotes, $, =, ~) is the shell's to interpret.
func ResolveHookCommand(command, dir string) string {
	command, _ = resolveHookCommand(command, dir)
	return command
}

// resolveHookCommand also returns the absolute path it put in, if any.
func resolveHookCommand(command, dir string) (string, string) {
	word, rest := splitFirstWord(command)
	if !plainWord(word) || !strings.Contains(word, "/") || filepath.IsAbs(word) {
		return command, ""
	}
	abs, err := filepath.Abs(filepath.Join(dir, word))
	if err != nil {
		return command, ""
	}
	return shellQuote(abs) + rest, abs
}

// splitFirstWord splits command, without leading blanks, where its first
// word ends.
func splitFirstWord(command string) (word, rest string) {
	command = strings.TrimLeft(command, " \t")
	if i := strings.IndexAny(command, " \t\n;&|"); i >= 0 {
		return command[:i], command[i:]
	}
	return command, ""
}

// plainWord: made only of characters that mean nothing to the shell.
func plainWord(word string) bool {
	return word != "" && strings.IndexFunc(word, func(r rune) bool { return !plainPathRune(r) }) < 0
}

func plainPathRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+,:@%", r)
}

// shellQuote quotes s for sh when it has anything but plain path characters
// (a checkout under "My Projects").
func shellQuote(s string) string {
	if plainWord(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// program is the absolute path of what the hook runs, and why it cannot
// run when that shows without running it. Both are empty when the first
// word is shell syntax: sh decides.
func (h Hook) program() (path, problem string) {
	path = h.path
	if path == "" {
		word, _ := splitFirstWord(h.Command)
		switch {
		case word == "":
			return "", "the command is empty"
		case !plainWord(word):
			return "", ""
		case !filepath.IsAbs(word):
			if p, err := exec.LookPath(word); err == nil {
				return p, ""
			}
			return "", word + " is not on PATH"
		}
		path = word
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return path, "no such file"
	case err != nil:
		return path, err.Error()
	case st.IsDir():
		return path, "a directory, not a program"
	case st.Mode().Perm()&0o111 == 0:
		return path, "not executable (chmod +x " + path + ")"
	}
	return path, ""
}

// Check runs the hook once with the check verb, the way its other verbs are
// run (sh -c "$CMD" sh check ...), and says why it cannot run, if it cannot.
func (h Hook) Check(ctx context.Context) error {
	return h.check(ctx, h.checkArgs, h.checkEnv)
}

// check is Check with the verb's arguments and environment given: the
// fault hook's `check <action>` asks about one action (faults.go).
func (h Hook) check(ctx context.Context, args, env []string) error {
	ctx, cancel := context.WithTimeout(ctx, HookCheckTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", h.Command, "sh"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return nil
	}
	path, problem := h.program()
	var b strings.Builder
	fmt.Fprintf(&b, "%s (env %s) cannot run: %q", h.Flag, h.Env, h.Given)
	if h.path != "" {
		fmt.Fprintf(&b, ", a relative path, resolved against %s (%s: the directory make was called from) to %s", h.Dir, HookDirEnv, path)
	} else if path != "" && path != h.Given {
		fmt.Fprintf(&b, ", runs %s", path)
	}
	if problem != "" {
		fmt.Fprintf(&b, ": %s", problem)
	}
	status := err.Error()
	if ctx.Err() != nil {
		status = fmt.Sprintf("no answer within %s", HookCheckTimeout)
	}
	fmt.Fprintf(&b, "\n    `sh -c \"$%s\" sh %s`: %s", h.Env, strings.TrimSpace(strings.Join(args, " ")), status)
	if tail := lastLines(out, 10); tail != "" {
		fmt.Fprintf(&b, "; its last output:\n      %s", strings.ReplaceAll(tail, "\n", "\n      "))
	}
	return errors.New(b.String())
}

// CheckHooks checks every given hook and returns one error for all that
// cannot run, or nil. A hook that was not given is not run.
func CheckHooks(ctx context.Context, hooks []Hook) error {
	var failed []string
	for _, h := range hooks {
		if h.Given == "" {
			continue
		}
		if err := h.Check(ctx); err != nil {
			failed = append(failed, err.Error())
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("a hook given to the suite cannot run, so no spec runs:\n  - %s\n"+
		"fix: give a hook that exists and is executable, as an absolute path, a name on PATH, or a path relative to the directory you run make from "+
		"(without make: relative to %s or --hook-dir), and make it exit 0, changing nothing, when called with %q "+
		"if it can do its job on this cluster (docs/vendor-guide.md, \"Every hook: the check and relative paths\"); or unset it, and the specs that need it skip",
		strings.Join(failed, "\n  - "), HookDirEnv, HookCheck)
}

// lastLines is the last n non-empty lines of out.
func lastLines(out []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(bytes.ReplaceAll(out, []byte("\r"), nil))), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}
