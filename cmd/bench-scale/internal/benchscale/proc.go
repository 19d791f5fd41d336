package benchscale

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the kernel's USER_HZ, the unit of utime and stime in
// /proc/<pid>/stat: 100 on every Linux architecture Go supports (the value
// is fixed by the ABI, whatever the kernel's internal HZ).
const clockTicks = 100

// ProcSample is what /proc says about a process at one moment.
type ProcSample struct {
	// CPU is user plus system time since the process started.
	CPU time.Duration
	// RSS is its resident set now (VmRSS), PeakRSS the highest it has been
	// over its life (VmHWM), in bytes.
	RSS, PeakRSS int64
}

// ReadProc samples /proc/<pid>/stat and /proc/<pid>/status.
func ReadProc(pid int) (ProcSample, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ProcSample{}, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcSample{}, err
	}
	var s ProcSample
	if s.CPU, err = ParseStatCPU(string(stat)); err != nil {
		return s, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	if s.RSS, err = ParseStatusBytes(string(status), "VmRSS"); err != nil {
		return s, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	if s.PeakRSS, err = ParseStatusBytes(string(status), "VmHWM"); err != nil {
		return s, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return s, nil
}

// ParseStatCPU returns utime+stime of a /proc/<pid>/stat line. The command
// name (field 2) is in parentheses and may itself hold spaces and
// parentheses, so the fields are counted from the last ')'.
func ParseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no ')' closing the command name in %.60q", stat)
	}
	// After the name: field 3 (state) is index 0, so utime (field 14) is
	// index 11 and stime (field 15) index 12.
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name; want at least 13", len(f))
	}
	var ticks uint64
	for _, s := range f[11:13] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("utime/stime %q: %w", s, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// ParseStatusBytes returns the "<key>:  <n> kB" line of /proc/<pid>/status in bytes.
func ParseStatusBytes(status, key string) (int64, error) {
	for _, line := range strings.Split(status, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != key {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%s: %q is not \"<n> kB\"", key, strings.TrimSpace(v))
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", key, err)
		}
		return n << 10, nil
	}
	return 0, fmt.Errorf("no %s line", key)
}
