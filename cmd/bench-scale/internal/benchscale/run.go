package benchscale

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/workload-aware/apps-harness/api/cluster"
	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/pkg/kwoknodes"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// Options configure a run.
type Options struct {
	// Ns are the sizes: N Deployments and N/2 StatefulSets each.
	Ns []int
	// Replicas per object.
	Replicas int
	// Artifacts receives the report, the plot and any profiles.
	Artifacts string
	// OutputDir holds bin/ (hack/build-binaries.sh); the cluster's work
	// directory is WorkDir, or <OutputDir>/bench-scale-cluster.
	OutputDir, WorkDir, KubeVersion string
	// Addon is the implementation's add-on descriptor, its binaries under
	// AddonBinDir (default <OutputDir>/bin).
	Addon, AddonBinDir string
	// Controller is the add-on component running the controllers (measured
	// and restarted with the gates off).
	Controller localcluster.Component
	// PhaseTimeout bounds each phase's wait for bound pods and its cleanup;
	// Budget bounds the whole run (what was measured by then is reported).
	PhaseTimeout, Budget time.Duration
	// MaxPodsPerPhase refuses an N whose phase would create more pods.
	MaxPodsPerPhase int
	// SchedulerQPS, if above 0, is kube-scheduler's client rate (QPS, and
	// twice as much burst). At its default of 50 the scheduler's one client
	// is the bottleneck of every phase: a plain pod costs it 1 write (the
	// binding) and a gang pod about 2 (the binding and a status write), so
	// gang phases bind at half the rate whatever the controllers do.
	SchedulerQPS int
	// ControllerQPS, if above 0, is each of the controller component's
	// clients' rate (--kube-api-qps, and twice that as --kube-api-burst).
	ControllerQPS int
	// CPUProfile captures a CPU profile of the controller process during
	// each mode's gang phase at the largest N (needs --pprof-address).
	CPUProfile bool
	// Logf receives progress lines.
	Logf func(format string, args ...any)
}

// Topology is the benchmark's cluster: 4 zones x 4 racks x 8 nodes.
func Topology() kwoknodes.Topology {
	t := kwoknodes.DefaultTopology()
	t.Zones, t.RacksPerZone, t.NodesPerRack = 4, 4, 8
	t.DevicesPerNode = 0 // no DRA: 128 ResourceSlices nobody uses
	return t
}

// podCPU is each pod's request: small, so capacity never decides.
const podCPU = "10m"

// Validate checks the sizes against the bounds.
func (o *Options) Validate() error {
	if len(o.Ns) == 0 {
		return errors.New("no N to measure")
	}
	if o.Replicas < 1 {
		return fmt.Errorf("replicas %d: want at least 1", o.Replicas)
	}
	topo := Topology()
	capacity := topo.Size() * 110
	for _, n := range o.Ns {
		pods := o.Replicas * (n + n/2)
		if n < 2 {
			return fmt.Errorf("N=%d: want at least 2 (N/2 StatefulSets)", n)
		}
		if pods > o.MaxPodsPerPhase || pods > capacity {
			return fmt.Errorf("N=%d makes %d pods per phase: more than the bound %d (or the %d nodes' %d pod slots)", n, pods, o.MaxPodsPerPhase, topo.Size(), capacity)
		}
	}
	return nil
}

// env is what every phase uses.
type env struct {
	o       Options
	cluster *localcluster.Cluster
	client  kubernetes.Interface
	intent  *framework.IntentSeam
	pprof   string // host:port, or empty
}

// Run starts the cluster, measures every N in both modes, writes the report
// and the plot into o.Artifacts, and stops the cluster, also on error or
// when ctx ends (Ctrl-C). Phases measured before a failure are reported.
func Run(ctx context.Context, o Options) (Results, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	started := time.Now()
	if err := os.MkdirAll(o.Artifacts, 0o755); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.Budget)
	defer cancel()
	e, stop, err := startCluster(ctx, o)
	defer func() {
		if err := stop(); err != nil {
			o.Logf("stopping the cluster: %v", err)
		}
	}()
	if err != nil {
		return nil, err
	}
	var results Results
	var notes, profiles []string
	notes = append(notes, schedulerRateNote(o.SchedulerQPS))
	if o.ControllerQPS > 0 {
		notes = append(notes, fmt.Sprintf("each controller's client rate (%s --kube-api-qps): %d QPS and %d burst, not its default of 50 and 100", o.Controller, o.ControllerQPS, 2*o.ControllerQPS))
	}
	largest := slices.Max(o.Ns)
	runErr := func() error {
		for _, n := range o.Ns {
			for _, mode := range []Mode{GatesOn, GatesOff} {
				if err := e.setMode(ctx, mode); err != nil {
					return err
				}
				for _, kind := range []Kind{Gang, Plain} {
					var profile string
					if o.CPUProfile && n == largest && kind == Gang {
						profile = filepath.Join(o.Artifacts, fmt.Sprintf("bench-scale-cpu-%s-n%d.pprof", mode, n))
					}
					p, err := e.runPhase(ctx, mode, n, kind, profile, estimate(results, mode, n))
					results = append(results, p)
					if profile != "" && p.Failed == "" {
						profiles = append(profiles, filepath.Base(profile))
					}
					if err := writeReport(o, results, Meta{Started: started, Took: time.Since(started), Notes: notes, Profiles: profiles}); err != nil {
						o.Logf("writing the report: %v", err)
					}
					if err != nil {
						return err
					}
				}
			}
		}
		return nil
	}()
	if runErr != nil {
		notes = append(notes, fmt.Sprintf("the run stopped early: %v", runErr))
	}
	if o.CPUProfile {
		notes = append(notes, "CPU profiling was on during the gang phases at the largest N: their CPU includes the profiler's small overhead")
	}
	meta := Meta{Started: started, Took: time.Since(started), Notes: notes, Profiles: profiles}
	if err := writeReport(o, results, meta); err != nil {
		return results, errors.Join(runErr, err)
	}
	return results, runErr
}

// schedulerRateNote says what bounds the scheduler's writes, which every
// time-to-bound figure depends on.
func schedulerRateNote(qps int) string {
	if qps <= 0 {
		return "kube-scheduler's client rate: its default, 50 QPS and 100 burst. At that rate the scheduler's client is the bottleneck: a gang pod costs it about 2 writes (binding and status) where a plain pod costs 1, so gang phases bind at about half the rate (--scheduler-qps raises it)"
	}
	return fmt.Sprintf("kube-scheduler's client rate: %d QPS and %d burst (--scheduler-qps; the default is 50 and 100)", qps, 2*qps)
}

// ReportFile and PlotFile are the outputs' names in Artifacts.
const (
	ReportFile = "bench-scale.md"
	PlotFile   = "bench-scale.png"
)

func writeReport(o Options, r Results, m Meta) error {
	m.Nodes = fmt.Sprintf("local, %d kwok nodes (%d zones x %d racks x %d nodes)", Topology().Size(), Topology().Zones, Topology().RacksPerZone, Topology().NodesPerRack)
	m.Replicas = o.Replicas
	m.Host = fmt.Sprintf("%d CPUs, %s", runtime.NumCPU(), runtime.Version())
	m.Requested = o.Ns
	if len(r) > 0 {
		if err := Plot(r, filepath.Join(o.Artifacts, PlotFile)); err != nil {
			m.Notes = append(m.Notes, "no plot: "+err.Error())
		} else {
			m.PlotFile = PlotFile
		}
	}
	return os.WriteFile(filepath.Join(o.Artifacts, ReportFile), []byte(Render(r, m)), 0o644)
}

// estimate is how long a gang phase at n should take in mode, from the
// previous N (linear), for the length of a CPU profile.
func estimate(r Results, mode Mode, n int) time.Duration {
	for i := len(r) - 1; i >= 0; i-- {
		if p := r[i]; p.Mode == mode && p.Kind == Gang && p.Failed == "" && p.N < n {
			return p.TimeToBound * time.Duration(n) / time.Duration(p.N)
		}
	}
	return 30 * time.Second
}

// startCluster starts the local cluster with the benchmark's topology, the
// widened audit policy and, if asked, the controller's pprof endpoint. The
// returned stop is always safe to call.
func startCluster(ctx context.Context, o Options) (*env, func() error, error) {
	noop := func() error { return nil }
	workDir := o.WorkDir
	if workDir == "" {
		workDir = filepath.Join(o.OutputDir, "bench-scale-cluster")
	}
	cfg := localcluster.DefaultConfig(o.OutputDir, o.KubeVersion, workDir)
	cfg.Name = "was-bench-scale"
	cfg.Nodes = Topology()
	cfg.ReadyTimeout = 2 * time.Minute
	cfg.AuditPolicy = AuditPolicy(append(slices.Clone(ControllerUsers), SchedulerUser))
	// The apiserver rotates its audit log at 100 MB by default, which a run
	// to N=200 passes; a phase reads its stretch by offset in one file.
	cfg.Components[localcluster.APIServer] = localcluster.ComponentConfig{ExtraArgs: map[string]string{"audit-log-maxsize": "4096"}}
	if o.SchedulerQPS > 0 {
		cfg.Components[localcluster.Scheduler] = localcluster.ComponentConfig{ExtraArgs: map[string]string{
			"kube-api-qps": strconv.Itoa(o.SchedulerQPS), "kube-api-burst": strconv.Itoa(2 * o.SchedulerQPS)}}
	}
	if o.ControllerQPS > 0 {
		cfg.Components[o.Controller] = cfg.Components[o.Controller].Merge(localcluster.ComponentConfig{ExtraArgs: map[string]string{
			"kube-api-qps": strconv.Itoa(o.ControllerQPS), "kube-api-burst": strconv.Itoa(2 * o.ControllerQPS)}})
	}
	cfg.Logf = o.Logf
	binDir := o.AddonBinDir
	if binDir == "" {
		binDir = filepath.Join(o.OutputDir, "bin")
	}
	a, err := localcluster.LoadImplementation(o.Addon, binDir)
	if err != nil {
		return nil, noop, err
	}
	cfg.Addons = append(cfg.Addons, a)
	e := &env{o: o}
	if o.CPUProfile {
		port, err := freePort()
		if err != nil {
			return nil, noop, err
		}
		e.pprof = fmt.Sprintf("127.0.0.1:%d", port)
		cfg.Components[o.Controller] = localcluster.ComponentConfig{ExtraArgs: map[string]string{"pprof-address": e.pprof}}
	}
	c, err := localcluster.New(cfg)
	if err != nil {
		return nil, noop, err
	}
	e.cluster = c
	// The work directory keeps the audit log of an earlier run; this run's
	// starts empty.
	stale, _ := filepath.Glob(strings.TrimSuffix(c.AuditLogPath(), ".log") + "*.log")
	for _, f := range stale {
		_ = os.Remove(f)
	}
	// Registered before Start: an interrupted start stops what came up.
	stop := c.Stop
	if err := c.Start(ctx); err != nil {
		return nil, stop, err
	}
	rc, err := c.RESTConfig()
	if err != nil {
		return nil, stop, err
	}
	// The benchmark's own client must not be what limits the creates.
	rc.QPS, rc.Burst = 500, 1000
	if e.client, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, stop, err
	}
	if e.intent, err = framework.NewIntentSeam(rc); err != nil {
		return nil, stop, fmt.Errorf("detecting how to write scheduling intent: %w", err)
	}
	o.Logf("scheduling intent is written as: %s (Deployments), %s (StatefulSets)", e.intent.Mode, e.intent.StatefulSetMode)
	return e, stop, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// setMode restarts the controller process with the implementation's gates
// on or off: a fresh process per (mode, N), so each starts from the same
// state (empty work queues, caches of an empty cluster).
func (e *env) setMode(ctx context.Context, mode Mode) error {
	on := mode == GatesOn
	e.o.Logf("restarting %s with %s=%t, %s=%t", e.o.Controller, cluster.WorkloadWithDeployment, on, cluster.WorkloadWithStatefulSet, on)
	return e.cluster.Restart(ctx, e.o.Controller, func(cc *localcluster.ComponentConfig) {
		*cc = cc.Merge(localcluster.ComponentConfig{FeatureGates: map[string]bool{
			cluster.WorkloadWithDeployment: on, cluster.WorkloadWithStatefulSet: on,
		}})
	})
}

func (e *env) controllerPID() (int, error) {
	pid, ok := e.cluster.PIDs()[e.o.Controller]
	if !ok {
		return 0, fmt.Errorf("%s is not running", e.o.Controller)
	}
	return pid, nil
}

// captureProfile fetches a CPU profile of d from the controller's pprof
// endpoint into path; the returned channel yields its error once done.
func (e *env) captureProfile(ctx context.Context, path string, d time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", e.pprof, int(d.Seconds())+1)
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET %s: %s", url, resp.Status)
			}
			f, err := os.Create(path)
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, resp.Body); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		}()
	}()
	return done
}

// deleteNamespace deletes ns and waits until it is gone, its pods with it,
// so no phase pays for the previous one's cleanup.
func (e *env) deleteNamespace(ctx context.Context, ns string) error {
	ctx, cancel := context.WithTimeout(ctx, e.o.PhaseTimeout)
	defer cancel()
	err := e.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for {
		_, err := e.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s not gone after %s: %w", ns, e.o.PhaseTimeout, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (e *env) createNamespace(ctx context.Context, ns string) error {
	_, err := e.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"was-harness.io/bench-scale": "true"}}}, metav1.CreateOptions{})
	return err
}
