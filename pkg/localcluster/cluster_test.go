package localcluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/workload-aware/apps-harness/pkg/kwoknodes"
)

// These tests start real control planes from the binaries that
// hack/build-binaries.sh builds. Without them they skip and say so.

func binariesOrSkip(t *testing.T) Config {
	t.Helper()
	out := os.Getenv("WAS_OUTPUT_DIR")
	if out == "" {
		out = filepath.Join("..", "..", "_output")
	}
	out, _ = filepath.Abs(out)
	version := os.Getenv("KUBE_VERSION")
	if version == "" {
		version = "v1.37.2"
	}
	cfg := DefaultConfig(out, version, t.TempDir())
	for _, b := range []string{filepath.Join(cfg.KubeBinDir, "kube-apiserver"), filepath.Join(cfg.ToolsBinDir, "etcd")} {
		if _, err := os.Stat(b); err != nil {
			t.Skipf("needs the control-plane binaries (run `make binaries`): %v", err)
		}
	}
	// The reference implementation runs, as an add-on, when `make tools`
	// has built it.
	ref, err := LoadImplementation(filepath.Join("..", "..", "controllers", "config", "localcluster-addon.yaml"), filepath.Join(out, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ref.Components[0].Binary); err != nil {
		t.Logf("running without the reference implementation: %v", err)
	} else {
		cfg.Addons = []Addon{ref}
	}
	cfg.Nodes = kwoknodes.Topology{Zones: 1, RacksPerZone: 1, NodesPerRack: 2, Capacity: kwoknodes.DefaultTopology().Capacity}
	cfg.Logf = t.Logf
	return cfg
}

func TestStartRestartStop(t *testing.T) {
	cfg := binariesOrSkip(t)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	ctx := context.Background()
	t0 := time.Now()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster ready in %s", time.Since(t0))
	before := c.PIDs()
	if len(before) != len(c.RunningComponents()) {
		t.Fatalf("running components %v, want all of %v", before, c.RunningComponents())
	}
	for name, pid := range before {
		if !pidAlive(pid) {
			t.Errorf("%s (pid %d) is not running after Start", name, pid)
		}
	}
	client := adminClient(t, c)
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 2 {
		t.Fatalf("nodes: %v (err %v), want 2", len(nodes.Items), err)
	}
	status, err := Status(cfg.WorkDir)
	if err != nil || strings.Count(status, "running") != len(c.RunningComponents()) {
		t.Errorf("Status() = %q, %v; want every component running", status, err)
	}

	// Restart one component with a gate turned off: only it changes.
	if err := c.Restart(ctx, Scheduler, func(cc *ComponentConfig) {
		cc.FeatureGates = map[string]bool{"DRAWorkloadResourceClaims": false}
	}); err != nil {
		t.Fatal(err)
	}
	after := c.PIDs()
	for name, pid := range before {
		switch {
		case name == Scheduler && after[name] == pid:
			t.Errorf("scheduler kept pid %d across a restart", pid)
		case name == Scheduler && pidAlive(pid):
			t.Errorf("the old scheduler (pid %d) still runs", pid)
		case name != Scheduler && after[name] != pid:
			t.Errorf("%s changed pid %d -> %d though only the scheduler restarted", name, pid, after[name])
		}
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", after[Scheduler]))
	if !strings.Contains(string(cmdline), "DRAWorkloadResourceClaims=false") {
		t.Errorf("restarted scheduler's command line lacks DRAWorkloadResourceClaims=false: %q", strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	if _, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("apiserver unreachable after a scheduler restart: %v", err)
	}
	logData, _ := os.ReadFile(c.LogPath(Scheduler))
	if n := strings.Count(string(logData), "=== "); n != 2 {
		t.Errorf("scheduler log has %d start headers, want 2 (the log is appended across restarts)", n)
	}

	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for name, pid := range after {
		if pidAlive(pid) {
			t.Errorf("%s (pid %d) still runs after Stop", name, pid)
		}
	}
	if _, err := os.Stat(filepath.Join(cfg.WorkDir, "state.json")); !os.IsNotExist(err) {
		t.Errorf("state file left after Stop: %v", err)
	}
}

func TestAFailingComponentIsNamedWithItsLogAndNothingIsLeft(t *testing.T) {
	cfg := binariesOrSkip(t)
	cfg.Components[Scheduler] = ComponentConfig{ExtraArgs: map[string]string{"no-such-flag": "1"}}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Start(context.Background())
	if err == nil {
		_ = c.Stop()
		t.Fatal("Start succeeded with an unknown scheduler flag")
	}
	msg := err.Error()
	if !strings.Contains(msg, "kube-scheduler failed to start") || !strings.Contains(msg, "no-such-flag") {
		t.Errorf("error does not name the component and quote its log:\n%s", msg)
	}
	if len(c.PIDs()) != 0 {
		t.Errorf("components left running after a failed start: %v", c.PIDs())
	}
	st, _ := Status(cfg.WorkDir)
	if strings.Contains(st, "running") {
		t.Errorf("status after a failed start: %s", st)
	}
}

// TestComponentsDieWithTheProcessThatStartedThem starts a cluster in a child
// process (this test binary, re-executed), kills that child with SIGKILL,
// and checks the kernel took every component with it: the guarantee behind
// "nothing is left running when a test run is interrupted".
func TestComponentsDieWithTheProcessThatStartedThem(t *testing.T) {
	cfg := binariesOrSkip(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStartAndHang$", "-test.v")
	cmd.Env = append(os.Environ(), "WAS_HELPER_WORKDIR="+cfg.WorkDir, "WAS_OUTPUT_DIR="+filepath.Dir(filepath.Dir(cfg.ToolsBinDir)))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var pids []int
	sc := bufio.NewScanner(stdout)
	deadline := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
			for _, f := range strings.Fields(rest) {
				pid, _ := strconv.Atoi(f)
				pids = append(pids, pid)
			}
			break
		}
	}
	if len(pids) < 5 {
		t.Fatalf("the helper did not report a started cluster (pids %v)", pids)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	end := time.Now().Add(15 * time.Second)
	for _, pid := range pids {
		for pidAlive(pid) && time.Now().Before(end) {
			time.Sleep(50 * time.Millisecond)
		}
		if pidAlive(pid) {
			t.Errorf("component pid %d survived the SIGKILL of the process that started it", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// TestHelperStartAndHang is the child of the test above; it does nothing in a normal run.
func TestHelperStartAndHang(t *testing.T) {
	dir := os.Getenv("WAS_HELPER_WORKDIR")
	if dir == "" {
		t.Skip("helper process of TestComponentsDieWithTheProcessThatStartedThem")
	}
	cfg := binariesOrSkip(t)
	cfg.WorkDir = dir
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, name := range c.RunningComponents() {
		pids = append(pids, strconv.Itoa(c.PIDs()[name]))
	}
	fmt.Printf("READY %s\n", strings.Join(pids, " "))
	select {} // killed by the parent
}

func adminClient(t *testing.T, c *Cluster) kubernetes.Interface {
	t.Helper()
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// TestClusterDownStopsADetachedCluster is `make cluster-up` then `make
// cluster-down`: a detached cluster, configured with relative paths, stopped
// from its state file alone as another process would.
func TestClusterDownStopsADetachedCluster(t *testing.T) {
	cfg := binariesOrSkip(t)
	wd, _ := os.Getwd()
	for _, p := range []*string{&cfg.KubeBinDir, &cfg.ToolsBinDir} {
		rel, err := filepath.Rel(wd, *p)
		if err != nil {
			t.Fatal(err)
		}
		*p = rel
	}
	cfg.Detach = true
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	pids := c.PIDs()
	if _, err := New(cfg); err != nil {
		t.Fatal(err)
	}
	second, _ := New(cfg)
	if err := second.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "still running") {
		_ = second.Stop()
		t.Errorf("a second Start over a running cluster's work directory = %v, want a 'still running' error", err)
	}
	stopped, err := StopWorkDir(cfg.WorkDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(stopped) != len(c.RunningComponents()) {
		t.Errorf("StopWorkDir stopped %v, want all %d components", stopped, len(c.RunningComponents()))
	}
	for name, pid := range pids {
		if pidAlive(pid) {
			t.Errorf("%s (pid %d) still runs after StopWorkDir", name, pid)
		}
	}
	if again, err := StopWorkDir(cfg.WorkDir); err != nil || len(again) != 0 {
		t.Errorf("a second StopWorkDir = %v, %v; want nothing to do", again, err)
	}
}
