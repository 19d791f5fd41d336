package benchscale

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// A name with spaces and a ')' of its own: fields count from the last ')'.
	// utime 250 and stime 130 ticks: 3.8 s.
	line := "4242 (was (con) mgr) S 1 4242 4242 0 -1 4194560 9003 0 0 0 250 130 0 0 20 0 12 0 1234 123456789 4567 18446744073709551615\n"
	got, err := ParseStatCPU(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3800 * time.Millisecond; got != want {
		t.Errorf("ParseStatCPU = %v, want %v", got, want)
	}
	for name, bad := range map[string]string{
		"no name":      "4242 S 1 2 3",
		"short":        "4242 (x) S 1 2 3",
		"not a number": "4242 (x) S 1 4242 4242 0 -1 4194560 9003 0 0 0 abc 130 0",
	} {
		if _, err := ParseStatCPU(bad); err == nil {
			t.Errorf("%s: no error for %q", name, bad)
		}
	}
}

func TestParseStatusBytes(t *testing.T) {
	status := "Name:\twas-controller-m\nVmPeak:\t 1500000 kB\nVmHWM:\t   81234 kB\nVmRSS:\t   70000 kB\nThreads:\t12\n"
	for key, want := range map[string]int64{"VmHWM": 81234 << 10, "VmRSS": 70000 << 10} {
		got, err := ParseStatusBytes(status, key)
		if err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", key, got, err, want)
		}
	}
	if _, err := ParseStatusBytes(status, "VmSwap"); err == nil {
		t.Error("a missing key gave no error")
	}
	if _, err := ParseStatusBytes(status, "Threads"); err == nil {
		t.Error("a line without kB gave no error")
	}
}

// TestReadProcSelf reads this test process: CPU and memory are positive and
// the peak is at least the current RSS.
func TestReadProcSelf(t *testing.T) {
	s, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.RSS <= 0 || s.PeakRSS < s.RSS {
		t.Errorf("RSS %d, peak %d: want 0 < RSS <= peak", s.RSS, s.PeakRSS)
	}
}
