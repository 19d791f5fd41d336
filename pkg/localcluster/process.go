package localcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// process is one running component.
type process struct {
	name Component
	cmd  *exec.Cmd
	pid  int
	log  string
	// done is closed when the process has exited and been reaped; nil for a
	// process this Go process did not start (attached from a state file).
	done    chan struct{}
	exitErr error
}

// startProcess starts binary with args, its stdout and stderr appended to
// logPath under a header naming the command line.
func startProcess(name Component, binary string, args []string, logPath string, detach bool) (*process, error) {
	if _, err := os.Stat(binary); err != nil {
		return nil, fmt.Errorf("%s: binary %s not found (run `make binaries` or hack/build-binaries.sh): %w", name, binary, err)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: opening log: %w", name, err)
	}
	defer logf.Close() // the child keeps its own descriptor
	fmt.Fprintf(logf, "\n=== %s starting: %s %s\n", time.Now().Format(time.RFC3339), binary, strings.Join(args, " "))
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !detach {
		// The kernel kills the component when the process that started it dies,
		// however it dies (Ctrl-C, a panic, SIGKILL from a CI timeout).
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: starting %s: %w", name, binary, err)
	}
	p := &process{name: name, cmd: cmd, pid: cmd.Process.Pid, log: logPath, done: make(chan struct{})}
	go func() {
		p.exitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended (and how).
func (p *process) exited() (bool, error) {
	if p.done == nil {
		return !pidAlive(p.pid), nil
	}
	select {
	case <-p.done:
		if p.exitErr == nil {
			return true, errors.New("exited with status 0")
		}
		return true, p.exitErr
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process group, waits up to grace, then SIGKILLs it.
func (p *process) stop(grace time.Duration) error {
	if gone, _ := p.exited(); gone {
		return nil
	}
	_ = syscall.Kill(-p.pid, syscall.SIGTERM)
	if p.wait(grace) {
		return nil
	}
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	if p.wait(10 * time.Second) {
		return nil
	}
	return fmt.Errorf("%s (pid %d) still running after SIGKILL", p.name, p.pid)
}

func (p *process) wait(d time.Duration) bool {
	if p.done != nil {
		select {
		case <-p.done:
			return true
		case <-time.After(d):
			return false
		}
	}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !pidAlive(p.pid) {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return !pidAlive(p.pid)
}

// pidAlive reports whether pid names a live, non-zombie process.
func pidAlive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no procfs: trust kill(0)
	}
	// The state is the field after the parenthesised command name.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

// pidRuns reports whether pid is alive and still runs binary, so that a state
// file never makes us kill a process that reused a PID.
func pidRuns(pid int, binary string) bool {
	if !pidAlive(pid) {
		return false
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return true
	}
	exe = strings.TrimSuffix(exe, " (deleted)")
	if exe == binary {
		return true
	}
	// /proc/PID/exe is the resolved path: a binary reached through a
	// symlink (an _output linked from another checkout) is still this one.
	// Without this, cluster down found "no running cluster" and left the
	// components running.
	resolved, err := filepath.EvalSymlinks(binary)
	return err == nil && resolved == exe
}

// tail returns the last n lines of a file that the latest start wrote (a
// restarted component's log also holds its earlier runs), for error messages.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	text := string(data)
	if i := strings.LastIndex(text, "\n=== "); i >= 0 {
		text = text[i+1:]
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
