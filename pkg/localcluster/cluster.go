package localcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/workload-aware/apps-harness/pkg/kwoknodes"
)

// Cluster is a local control plane. Create it with New, then Start; always
// Stop it (Stop is safe to call more than once and after a failed Start).
type Cluster struct {
	mu               sync.Mutex
	cfg              Config
	paths            paths
	ports            ports
	advertiseAddress string
	procs            map[Component]*process
	client           kubernetes.Interface
	wroteState       bool
}

// New validates cfg and prepares a cluster; nothing runs until Start.
func New(cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Components == nil {
		cfg.Components = map[Component]ComponentConfig{}
	}
	// Absolute paths: the state file must name the very binaries /proc shows,
	// and components must not depend on the caller's working directory.
	paths := []*string{&cfg.WorkDir, &cfg.KubeBinDir, &cfg.ToolsBinDir}
	cfg.Addons = slices.Clone(cfg.Addons)
	for i := range cfg.Addons {
		cfg.Addons[i].Components = slices.Clone(cfg.Addons[i].Components)
		for j := range cfg.Addons[i].Components {
			paths = append(paths, &cfg.Addons[i].Components[j].Binary)
		}
	}
	for _, p := range paths {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return nil, err
		}
		*p = abs
	}
	for name, cc := range cfg.Components {
		if cc.Binary != "" {
			abs, err := filepath.Abs(cc.Binary)
			if err != nil {
				return nil, err
			}
			cc.Binary = abs
			cfg.Components[name] = cc
		}
	}
	abs := cfg.WorkDir
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	return &Cluster{cfg: cfg, paths: newPaths(abs), procs: map[Component]*process{}}, nil
}

// KubeconfigPath is the admin kubeconfig (system:masters).
func (c *Cluster) KubeconfigPath() string { return c.paths.adminKubeconfig() }

// LogPath is where a component's stdout and stderr go.
func (c *Cluster) LogPath(name Component) string { return c.paths.log(name) }

// AuditLogPath is the apiserver's audit log: one JSON event per write to
// scheduling.k8s.io Workloads and PodGroups (see DefaultAuditPolicy), or
// what Config.AuditPolicy asks for.
func (c *Cluster) AuditLogPath() string { return c.paths.auditLog() }

// DefaultAuditPolicy records who writes Workloads and PodGroups, and nothing else.
const DefaultAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create, update, patch, delete]
  resources:
  - group: scheduling.k8s.io
    resources: [workloads, podgroups]
- level: None
`

// MetricsURL returns the plain-HTTP metrics address of an add-on component
// that declares one (the Kubernetes components serve metrics over
// authenticated HTTPS only).
func (c *Cluster) MetricsURL(name Component) (string, error) {
	_, ac := c.cfg.addonComponent(name)
	if ac == nil || ac.MetricsPath == "" {
		return "", fmt.Errorf("MetricsURL: %s serves no plain-HTTP metrics (only add-on components with a metricsPath do)", name)
	}
	return fmt.Sprintf("http://%s:%d%s", loopback, c.ports.of(name), ac.MetricsPath), nil
}

// SecureURL returns the HTTPS address (no path) where kube-controller-manager
// or kube-scheduler serves /healthz and /metrics on loopback, with a
// self-signed certificate; /metrics there needs a client the apiserver
// authenticates and authorizes (the admin kubeconfig's).
func (c *Cluster) SecureURL(name Component) (string, error) {
	if name != ControllerManager && name != Scheduler {
		return "", fmt.Errorf("SecureURL: %s is not kube-controller-manager or kube-scheduler", name)
	}
	return fmt.Sprintf("https://%s:%d", loopback, c.ports.of(name)), nil
}

// LogDir holds every component's log.
func (c *Cluster) LogDir() string { return c.paths.logs }

// RESTConfig returns an admin client configuration.
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", c.KubeconfigPath())
}

// Config returns a copy of the configuration in force (after restarts).
func (c *Cluster) Config() Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.cfg
	out.Components = map[Component]ComponentConfig{}
	for k, v := range c.cfg.Components {
		out.Components[k] = v.DeepCopy()
	}
	return out
}

func (c *Cluster) binary(name Component) string {
	if b := c.cfg.Components[name].Binary; b != "" {
		return b
	}
	if name == Etcd || name == Kwok {
		return filepath.Join(c.cfg.ToolsBinDir, string(name))
	}
	if _, ac := c.cfg.addonComponent(name); ac != nil {
		return ac.Binary
	}
	return filepath.Join(c.cfg.KubeBinDir, string(name))
}

// Start generates PKI, starts every component in order and waits for each,
// then registers the simulated nodes and waits until they are Ready. On error
// it stops what it started.
func (c *Cluster) Start(ctx context.Context) (err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() {
		if err != nil {
			c.stopLocked()
		}
	}()
	t0 := time.Now()
	if err := c.prepareWorkDir(); err != nil {
		return err
	}
	if c.ports, err = allocatePorts(&c.cfg); err != nil {
		return err
	}
	c.advertiseAddress = advertiseAddress()
	if err := c.writePKI(); err != nil {
		return fmt.Errorf("generating PKI: %w", err)
	}
	if err := os.WriteFile(c.paths.kwokConfig, kwoknodes.Stages(), 0o644); err != nil {
		return err
	}
	policy := c.cfg.AuditPolicy
	if policy == "" {
		policy = DefaultAuditPolicy
	}
	if err := os.WriteFile(c.paths.auditPolicy, []byte(policy), 0o644); err != nil {
		return err
	}
	for _, name := range c.components() {
		if err := c.startLocked(ctx, name); err != nil {
			return err
		}
		if err := c.saveStateLocked(); err != nil {
			return err
		}
		switch {
		case name == APIServer:
			// Registered as soon as the API is up, so the node lifecycle
			// controller's first pass can clear the not-ready taints while the
			// remaining components start.
			if err := c.createNodes(ctx); err != nil {
				return err
			}
			if err := c.installManifests(ctx, ""); err != nil {
				return err
			}
		case !slices.Contains(CoreComponents, name):
			if err := c.installManifests(ctx, name); err != nil {
				return err
			}
		}
	}
	if err := c.waitNodesSchedulable(ctx); err != nil {
		return err
	}
	c.cfg.Logf("cluster ready in %.1fs: kubeconfig %s, logs %s", time.Since(t0).Seconds(), c.KubeconfigPath(), c.paths.logs)
	return nil
}

// prepareWorkDir empties the cluster's own subdirectories (a previous run's
// etcd data would resurrect its objects) but keeps anything else the user put there.
func (c *Cluster) prepareWorkDir() error {
	if st, err := readState(c.paths.state()); err == nil && st.anyRunning() {
		return fmt.Errorf("a cluster from %s is still running (pids %v); stop it first with `make cluster-down` or `was-harness cluster down --dir %s`",
			c.paths.root, st.pids(), c.paths.root)
	}
	for _, d := range []string{c.paths.pki, c.paths.etcdData, filepath.Join(c.paths.root, "serving-certs")} {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
	}
	for _, d := range []string{c.paths.pki, c.paths.logs, c.paths.etcdData} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	for _, name := range c.components() {
		_ = os.Remove(c.paths.log(name)) // logs of this run only
		if err := os.MkdirAll(c.paths.certDir(name), 0o700); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) startLocked(ctx context.Context, name Component) error {
	t0 := time.Now()
	c.cfg.Logf("starting %s", name)
	args, err := c.componentArgs(name)
	if err != nil {
		return err
	}
	renewReservation(c.ports.of(name))
	renewReservation(c.ports.serving(name))
	if name == Etcd {
		renewReservation(c.ports.etcdPeer)
	}
	p, err := startProcess(name, c.binary(name), args, c.paths.log(name), c.cfg.Detach)
	if err != nil {
		return err
	}
	c.procs[name] = p
	if err := c.waitReady(ctx, p); err != nil {
		return err
	}
	c.cfg.Logf("%s ready in %.2fs (pid %d)", name, time.Since(t0).Seconds(), p.pid)
	return nil
}

// waitReady polls the component's health endpoint until it answers, the
// process exits, or the timeout passes; failures carry the tail of its log.
func (c *Cluster) waitReady(ctx context.Context, p *process) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ReadyTimeout)
	defer cancel()
	probe, err := c.probe(p.name)
	if err != nil {
		return err
	}
	var lastErr error
	for {
		if gone, exitErr := p.exited(); gone {
			return fmt.Errorf("%s failed to start (%v); last lines of %s:\n%s", p.name, exitErr, p.log, tail(p.log, 25))
		}
		if lastErr = probe(ctx); lastErr == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s (last probe: %v); last lines of %s:\n%s", p.name, c.cfg.ReadyTimeout, lastErr, p.log, tail(p.log, 25))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// probe returns the readiness check of a component.
func (c *Cluster) probe(name Component) (func(context.Context) error, error) {
	insecure := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // self-signed serving certs of kcm/scheduler; we only read /healthz
	}}
	get := func(client *http.Client, url string) func(context.Context) error {
		return func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET %s: %s", url, resp.Status)
			}
			return nil
		}
	}
	port := c.ports.of(name)
	switch name {
	case Etcd:
		return get(http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/health", port)), nil
	case Kwok:
		return get(http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/healthz", port)), nil
	case ControllerManager, Scheduler:
		return get(insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", port)), nil
	case APIServer:
		cfg, err := c.RESTConfig()
		if err != nil {
			return nil, err
		}
		cfg.Timeout = 2 * time.Second
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			_, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			return err
		}, nil
	}
	if _, ac := c.cfg.addonComponent(name); ac != nil {
		return get(http.DefaultClient, fmt.Sprintf("http://%s:%d%s", loopback, port, ac.HealthPath)), nil
	}
	return nil, fmt.Errorf("no readiness probe for %q", name)
}

func (c *Cluster) adminClient() (kubernetes.Interface, error) {
	if c.client != nil {
		return c.client, nil
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	c.client, err = kubernetes.NewForConfig(cfg)
	return c.client, err
}

// Restart stops one component and starts it again with mutate applied to its
// ComponentConfig, on the same port, while the rest keeps running. A mutate of
// nil restarts with the same flags.
func (c *Cluster) Restart(ctx context.Context, name Component, mutate func(*ComponentConfig)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Contains(c.components(), name) {
		return fmt.Errorf("Restart: component %q does not run in this cluster; running: %v", name, c.components())
	}
	if mutate != nil {
		cc := c.cfg.Components[name].DeepCopy()
		mutate(&cc)
		next := c.cfg
		next.Components = map[Component]ComponentConfig{}
		for k, v := range c.cfg.Components {
			next.Components[k] = v
		}
		next.Components[name] = cc
		if err := next.Validate(); err != nil {
			return fmt.Errorf("Restart %s: %w", name, err)
		}
		c.cfg = next
	}
	if p := c.procs[name]; p != nil {
		c.cfg.Logf("stopping %s (pid %d) for restart", name, p.pid)
		if err := p.stop(stopGrace(name, 15*time.Second)); err != nil {
			return err
		}
	}
	if err := c.startLocked(ctx, name); err != nil {
		return fmt.Errorf("restarting %s: %w", name, err)
	}
	if err := c.healLocked(ctx, name); err != nil {
		return err
	}
	return c.saveStateLocked()
}

// apiServerStopGrace bounds kube-apiserver's graceful termination. It stops
// listening within milliseconds of SIGTERM, but then does not exit until it
// is killed (measured on v1.37.2: 15 s, the whole grace, on every restart).
// Those seconds serve nobody, and they are not harmless: every client's
// reflector backs off exponentially (up to 30 s) while the port is closed,
// so a 15 s outage kept informers away for up to a minute after the restart.
const apiServerStopGrace = 2 * time.Second

// stopGrace is how long component may take to exit after SIGTERM before it
// is killed.
func stopGrace(component Component, def time.Duration) time.Duration {
	if component == APIServer {
		return apiServerStopGrace
	}
	return def
}

// healLocked starts again any other component that exited while restarted
// was down. kube-controller-manager, for one, exits ("Error building
// controllers ... connection refused") when the apiserver goes away while it
// is still starting, though it had already answered /healthz; a later spec
// would then run without garbage collection or the ResourceClaim controller.
func (c *Cluster) healLocked(ctx context.Context, restarted Component) error {
	for _, other := range c.components() {
		p := c.procs[other]
		if other == restarted || p == nil {
			continue
		}
		if gone, _ := p.exited(); !gone {
			continue
		}
		c.cfg.Logf("%s (pid %d) exited while %s restarted; starting it again (log %s)", other, p.pid, restarted, p.log)
		if err := c.startLocked(ctx, other); err != nil {
			return fmt.Errorf("starting %s again after %s restarted: %w", other, restarted, err)
		}
	}
	return nil
}

// Stop stops every component in reverse start order. It reports, but does
// not stop at, a component that refuses to die.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopLocked()
}

func (c *Cluster) stopLocked() error {
	var errs []error
	all := c.components()
	for i := len(all) - 1; i >= 0; i-- {
		if p := c.procs[all[i]]; p != nil {
			if err := p.stop(stopGrace(all[i], 10*time.Second)); err != nil {
				errs = append(errs, err)
			}
			delete(c.procs, all[i])
		}
	}
	if c.wroteState && len(errs) == 0 {
		// Only the state this cluster wrote: a Start refused because another
		// cluster runs in the same directory must not orphan that cluster.
		_ = os.Remove(c.paths.state())
		c.wroteState = false
	}
	return errors.Join(errs...)
}

// PIDs returns the PIDs of the running components.
func (c *Cluster) PIDs() map[Component]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[Component]int{}
	for name, p := range c.procs {
		out[name] = p.pid
	}
	return out
}

// components returns the components this cluster runs, in start order.
func (c *Cluster) components() []Component { return c.cfg.AllComponents() }

// RunningComponents lists the components this cluster runs, in start order.
func (c *Cluster) RunningComponents() []Component { return c.components() }

// RestartTogether stops every named component before starting any of them
// again, then starts them in start order with the same flags, as a restart
// of the machine they share does (all of the control plane: etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and what runs
// beside them); the rest keeps running.
func (c *Cluster) RestartTogether(ctx context.Context, names ...Component) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	all := c.components()
	for _, name := range names {
		if !slices.Contains(all, name) {
			return fmt.Errorf("RestartTogether: component %q does not run in this cluster; running: %v", name, all)
		}
	}
	for i := len(all) - 1; i >= 0; i-- {
		if p := c.procs[all[i]]; p != nil && slices.Contains(names, all[i]) {
			c.cfg.Logf("stopping %s (pid %d) for a restart of %v", all[i], p.pid, names)
			if err := p.stop(stopGrace(all[i], 15*time.Second)); err != nil {
				return err
			}
		}
	}
	for _, name := range all {
		if !slices.Contains(names, name) {
			continue
		}
		if err := c.startLocked(ctx, name); err != nil {
			return fmt.Errorf("restarting %s: %w", name, err)
		}
	}
	if err := c.healLocked(ctx, ""); err != nil {
		return err
	}
	return c.saveStateLocked()
}

// Kill sends SIGKILL to a component's process group, wherever it is in its
// work (no graceful shutdown, no released lock or lease), waits until it is
// gone and starts it again with the same flags, as a kubelet restarts a
// killed container.
func (c *Cluster) Kill(ctx context.Context, name Component) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.procs[name]
	if p == nil {
		return fmt.Errorf("Kill: component %q does not run in this cluster; running: %v", name, c.components())
	}
	if err := syscall.Kill(-p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("Kill %s (pid %d): %w", name, p.pid, err)
	}
	if !p.wait(10 * time.Second) {
		return fmt.Errorf("Kill: %s (pid %d) still runs 10s after SIGKILL", name, p.pid)
	}
	c.cfg.Logf("killed %s (pid %d) with SIGKILL", name, p.pid)
	if err := c.startLocked(ctx, name); err != nil {
		return fmt.Errorf("starting %s again after SIGKILL: %w", name, err)
	}
	if err := c.healLocked(ctx, name); err != nil {
		return err
	}
	return c.saveStateLocked()
}
