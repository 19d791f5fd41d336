package localcluster

// The state file lets another process stop (`cluster down`), inspect
// (`cluster status`) or reconfigure (`cluster restart`) what Start began.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

type stateComponent struct {
	Name   Component `json:"name"`
	PID    int       `json:"pid"`
	Binary string    `json:"binary"`
	Log    string    `json:"log"`
}

type state struct {
	Name       string           `json:"name"`
	Kubeconfig string           `json:"kubeconfig"`
	Components []stateComponent `json:"components"`
	// Config, Ports and AdvertiseAddress let Attach rebuild the Cluster in
	// another process, so `was-harness cluster restart` can reconfigure a
	// detached cluster one component at a time.
	Config           *Config           `json:"config,omitempty"`
	Ports            map[Component]int `json:"ports,omitempty"`
	ServingPorts     map[Component]int `json:"servingPorts,omitempty"`
	EtcdPeerPort     int               `json:"etcdPeerPort,omitempty"`
	AdvertiseAddress string            `json:"advertiseAddress,omitempty"`
}

func (s *state) anyRunning() bool { return len(s.pids()) > 0 }

func (s *state) pids() []int {
	var out []int
	for _, sc := range s.Components {
		if pidRuns(sc.PID, sc.Binary) {
			out = append(out, sc.PID)
		}
	}
	return out
}

func (c *Cluster) saveStateLocked() error {
	cfg := c.cfg
	st := state{Name: c.cfg.Name, Kubeconfig: c.KubeconfigPath(), Config: &cfg, Ports: map[Component]int{},
		ServingPorts: c.ports.addonServing, EtcdPeerPort: c.ports.etcdPeer, AdvertiseAddress: c.advertiseAddress}
	for _, name := range c.components() {
		st.Ports[name] = c.ports.of(name)
	}
	for _, name := range c.components() {
		if p := c.procs[name]; p != nil {
			st.Components = append(st.Components, stateComponent{Name: name, PID: p.pid, Binary: c.binary(name), Log: p.log})
		}
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.paths.state(), data, 0o644); err != nil {
		return err
	}
	c.wroteState = true
	return nil
}

func readState(path string) (*state, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	st := &state{}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return st, nil
}

// Attach rebuilds the Cluster recorded in workDir's state file by another
// process (a detached cluster from `make cluster-up`), so that Restart can
// reconfigure one of its components. Restarted components stay detached.
func Attach(workDir string, logf func(string, ...any)) (*Cluster, error) {
	st, err := readState(newPaths(workDir).state())
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no cluster recorded in %s (start one with `make cluster-up`)", workDir)
	}
	if err != nil {
		return nil, err
	}
	if st.Config == nil || len(st.Ports) == 0 {
		return nil, fmt.Errorf("the state file in %s predates `cluster restart`; restart the cluster with `make cluster-down cluster-up`", workDir)
	}
	cfg := *st.Config
	cfg.Detach = true
	cfg.Logf = logf
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	c := &Cluster{cfg: cfg, paths: newPaths(cfg.WorkDir), procs: map[Component]*process{}, advertiseAddress: st.AdvertiseAddress}
	c.ports = ports{etcdClient: st.Ports[Etcd], etcdPeer: st.EtcdPeerPort, apiserver: st.Ports[APIServer], controllerManager: st.Ports[ControllerManager],
		scheduler: st.Ports[Scheduler], kwok: st.Ports[Kwok], addon: map[Component]int{}, addonServing: map[Component]int{}}
	for _, name := range cfg.AllComponents()[len(CoreComponents):] {
		c.ports.addon[name] = st.Ports[name]
		if p, ok := st.ServingPorts[name]; ok {
			c.ports.addonServing[name] = p
		}
	}
	for _, sc := range st.Components {
		if pidRuns(sc.PID, sc.Binary) {
			c.procs[sc.Name] = &process{name: sc.Name, pid: sc.PID, log: sc.Log}
		}
	}
	return c, nil
}

// StopWorkDir stops the components recorded in workDir's state file by a
// cluster started elsewhere (for example by `make cluster-up`), in reverse
// start order, checking that each PID still runs the recorded binary. It
// returns the components it stopped; no state file means nothing to stop.
func StopWorkDir(workDir string) ([]string, error) {
	path := newPaths(workDir).state()
	st, err := readState(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var stopped []string
	var errs []error
	for i := len(st.Components) - 1; i >= 0; i-- {
		sc := st.Components[i]
		if !pidRuns(sc.PID, sc.Binary) {
			continue
		}
		p := &process{name: sc.Name, pid: sc.PID, log: sc.Log}
		if err := p.stop(stopGrace(sc.Name, 10*time.Second)); err != nil {
			errs = append(errs, err)
			continue
		}
		stopped = append(stopped, fmt.Sprintf("%s (pid %d)", sc.Name, sc.PID))
	}
	if len(errs) == 0 {
		_ = os.Remove(path)
	}
	return stopped, errors.Join(errs...)
}

// Status describes a cluster recorded in workDir: one line per component.
func Status(workDir string) (string, error) {
	st, err := readState(newPaths(workDir).state())
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("no cluster recorded in %s (start one with `make cluster-up`)", workDir)
	}
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kubeconfig: %s\n", st.Kubeconfig)
	for _, sc := range st.Components {
		status := "stopped"
		if pidRuns(sc.PID, sc.Binary) {
			status = "running"
		}
		// The port: where a spec given a component's URL reaches it (e.g.
		// kube-scheduler's https /metrics, --scheduler-metrics-url).
		port := "-"
		if p := st.Ports[sc.Name]; p != 0 {
			port = fmt.Sprint(p)
		}
		fmt.Fprintf(&b, "%-24s pid %-7d %-8s port %-5s log %s\n", sc.Name, sc.PID, status, port, sc.Log)
	}
	return b.String(), nil
}
