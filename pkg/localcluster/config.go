// Package localcluster runs a real Kubernetes control plane as local processes:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, on
// free loopback ports, with PKI generated in Go and kwok simulating the nodes.
//
// It is the harness's only cluster provider that needs nothing but Go: the
// binaries come from hack/build-binaries.sh. A Cluster starts in dependency
// order, waits for each component to be ready, keeps every component's log,
// can restart a single component with different flags while the rest keeps
// running, and stops everything it started by PID.
//
// # Add-ons
//
// What runs beside the control plane is an Addon: processes (with their
// flags, identity, health endpoint and, for a webhook, a serving
// certificate) and manifests applied once the apiserver or one of the
// add-on's processes is ready. An Addon is plain data, read from a
// descriptor file (LoadAddon), so the cluster and the harness that starts it
// link no code of what they run: an implementation of the KEPs, the
// reference one included (controllers/config/localcluster-addon.yaml), is
// plugged in by naming its descriptor, and its names, flags and manifests
// stay on its side. The package knows the KEPs only through api/cluster:
// the gates and API versions every component gets, and the gates and
// replaced kube-controller-manager controllers of an implementation
// (LoadImplementation).
package localcluster

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/workload-aware/apps-harness/api/cluster"
	"github.com/workload-aware/apps-harness/pkg/kwoknodes"
)

// Component names a process of the local cluster: one of CoreComponents or
// an add-on's.
type Component string

// The control plane's components.
const (
	Etcd              Component = "etcd"
	APIServer         Component = "kube-apiserver"
	ControllerManager Component = "kube-controller-manager"
	Scheduler         Component = "kube-scheduler"
	Kwok              Component = "kwok"
)

// CoreComponents lists the control plane in start order; add-ons' components
// start after it, and Stop goes in reverse.
var CoreComponents = []Component{Etcd, APIServer, ControllerManager, Scheduler, Kwok}

// ComponentConfig holds the per-component inputs. The zero value runs the
// component with the cluster's defaults.
type ComponentConfig struct {
	// FeatureGates are applied on top of Config.FeatureGates for this component
	// only (a false value turns a cluster-wide gate off here).
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
	// OmitFeatureGates are left out of this component's --feature-gates
	// altogether: a binary of another Kubernetes version refuses gates it does
	// not know, whatever their value.
	OmitFeatureGates []string `json:"omitFeatureGates,omitempty"`
	// ExtraArgs are flags without the leading "--"; a key that the harness also
	// sets replaces the harness's value. Use FeatureGates and
	// Config.RuntimeConfig rather than "feature-gates" or "runtime-config".
	ExtraArgs map[string]string `json:"extraArgs,omitempty"`
	// RuntimeConfig is merged on top of Config.RuntimeConfig for the
	// kube-apiserver only (for example "scheduling.k8s.io/v1beta1": "false" to
	// stop serving an API group version on a live cluster).
	RuntimeConfig map[string]string `json:"runtimeConfig,omitempty"`
	// Binary replaces the default binary path (for example another Kubernetes
	// version for skew tests).
	Binary string `json:"binary,omitempty"`
}

// DeepCopy returns an independent copy.
func (cc ComponentConfig) DeepCopy() ComponentConfig {
	return ComponentConfig{FeatureGates: maps.Clone(cc.FeatureGates), ExtraArgs: maps.Clone(cc.ExtraArgs),
		RuntimeConfig: maps.Clone(cc.RuntimeConfig), Binary: cc.Binary, OmitFeatureGates: slices.Clone(cc.OmitFeatureGates)}
}

// Merge returns cc with change applied over it: gates, runtime-config and
// extra flags merged key by key (change wins), omitted gates added, and the
// binary replaced when change names one. cc is not modified.
func (cc ComponentConfig) Merge(change ComponentConfig) ComponentConfig {
	out := cc.DeepCopy()
	merge := func(dst *map[string]string, src map[string]string) {
		if len(src) > 0 {
			if *dst == nil {
				*dst = map[string]string{}
			}
			maps.Copy(*dst, src)
		}
	}
	if len(change.FeatureGates) > 0 {
		if out.FeatureGates == nil {
			out.FeatureGates = map[string]bool{}
		}
		maps.Copy(out.FeatureGates, change.FeatureGates)
	}
	merge(&out.RuntimeConfig, change.RuntimeConfig)
	merge(&out.ExtraArgs, change.ExtraArgs)
	out.OmitFeatureGates = append(out.OmitFeatureGates, change.OmitFeatureGates...)
	if change.Binary != "" {
		out.Binary = change.Binary
	}
	return out
}

// String lists the settings, for logs and spec steps.
func (cc ComponentConfig) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(cc.FeatureGates)) {
		parts = append(parts, fmt.Sprintf("%s=%t", k, cc.FeatureGates[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(cc.RuntimeConfig)) {
		parts = append(parts, fmt.Sprintf("runtime-config %s=%s", k, cc.RuntimeConfig[k]))
	}
	if cc.Binary != "" {
		parts = append(parts, "binary "+cc.Binary)
	}
	if len(cc.OmitFeatureGates) > 0 {
		parts = append(parts, "without gates "+strings.Join(cc.OmitFeatureGates, ","))
	}
	for _, k := range slices.Sorted(maps.Keys(cc.ExtraArgs)) {
		parts = append(parts, fmt.Sprintf("--%s=%s", k, cc.ExtraArgs[k]))
	}
	if len(parts) == 0 {
		return "the cluster's defaults"
	}
	return strings.Join(parts, ", ")
}

// Config is the whole input of a local cluster.
type Config struct {
	// Name is used for the kubeconfig context.
	Name string
	// WorkDir receives the PKI, kubeconfigs, etcd data, component logs and the
	// state file that `cluster down` reads.
	WorkDir string
	// KubeBinDir holds kube-apiserver, kube-controller-manager and
	// kube-scheduler; ToolsBinDir holds etcd and kwok.
	KubeBinDir, ToolsBinDir string
	// FeatureGates go to every component that takes Kubernetes feature gates.
	FeatureGates map[string]bool
	// RuntimeConfig is kube-apiserver's --runtime-config.
	RuntimeConfig map[string]string
	// Components holds per-component overrides, add-on components included.
	Components map[Component]ComponentConfig
	// Addons run beside the control plane, in order (see Addon).
	Addons []Addon
	// Nodes is the simulated node topology kwok manages.
	Nodes kwoknodes.Topology
	// ReadyTimeout bounds the wait for each component and for the nodes.
	ReadyTimeout time.Duration
	// AuditPolicy is kube-apiserver's audit policy (YAML); empty: the
	// default, which records only writes to Workloads and PodGroups
	// (DefaultAuditPolicy). A benchmark widens it to count a component's
	// every request.
	AuditPolicy string `json:"auditPolicy,omitempty"`
	// Detach lets the processes outlive the Go process that started them (for
	// `make cluster-up`). Without it every component is killed by the kernel
	// when the starting process dies, so an interrupted test run leaves nothing.
	Detach bool
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any) `json:"-"`
}

// DefaultConfig returns a configuration with the gates and API versions of
// api/cluster, binaries under outputDir/bin as hack/build-binaries.sh lays
// them out, the default node topology, and no add-on.
func DefaultConfig(outputDir, kubeVersion, workDir string) Config {
	return Config{
		Name:          "was-local",
		WorkDir:       workDir,
		KubeBinDir:    filepath.Join(outputDir, "bin", "kube", kubeVersion),
		ToolsBinDir:   filepath.Join(outputDir, "bin", "tools"),
		FeatureGates:  cluster.KubeFeatureGates(),
		RuntimeConfig: cluster.RuntimeConfig(),
		Components:    map[Component]ComponentConfig{},
		Nodes:         kwoknodes.DefaultTopology(),
		ReadyTimeout:  60 * time.Second,
	}
}

// Validate reports configuration mistakes with the field to fix.
func (c *Config) Validate() error {
	if c.WorkDir == "" {
		return fmt.Errorf("Config.WorkDir is empty: set a directory for PKI, logs and state")
	}
	if c.KubeBinDir == "" || c.ToolsBinDir == "" {
		return fmt.Errorf("Config.KubeBinDir and Config.ToolsBinDir must be set (run hack/build-binaries.sh)")
	}
	if err := c.validateAddons(); err != nil {
		return err
	}
	for name, cc := range c.Components {
		if !slices.Contains(c.AllComponents(), name) {
			return fmt.Errorf("Config.Components[%q]: unknown component; known: %v", name, c.AllComponents())
		}
		for _, reserved := range []string{"feature-gates", "runtime-config"} {
			if _, ok := cc.ExtraArgs[reserved]; ok {
				return fmt.Errorf("Config.Components[%q].ExtraArgs[%q]: set FeatureGates / Config.RuntimeConfig instead, so gates merge predictably", name, reserved)
			}
		}
		if len(cc.RuntimeConfig) > 0 && name != APIServer {
			return fmt.Errorf("Config.Components[%q].RuntimeConfig: only %s takes --runtime-config", name, APIServer)
		}
		if len(cc.FeatureGates) > 0 && !c.TakesFeatureGates(name) {
			return fmt.Errorf("Config.Components[%q].FeatureGates: %s takes no Kubernetes feature gates", name, name)
		}
	}
	if err := c.Nodes.Validate(); err != nil {
		return fmt.Errorf("Config.Nodes: %w", err)
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = 60 * time.Second
	}
	return nil
}

// AllComponents lists the control plane's and the add-ons' components, in
// start order.
func (c *Config) AllComponents() []Component {
	out := slices.Clone(CoreComponents)
	for _, a := range c.Addons {
		for _, ac := range a.Components {
			out = append(out, ac.Name)
		}
	}
	return out
}

// TakesFeatureGates reports whether a component accepts Kubernetes-style
// --feature-gates.
func (c *Config) TakesFeatureGates(name Component) bool {
	if name == APIServer || name == ControllerManager || name == Scheduler {
		return true
	}
	_, ac := c.addonComponent(name)
	return ac != nil && ac.TakesFeatureGates
}

// addonComponent finds an add-on's component; nil when name is none.
func (c *Config) addonComponent(name Component) (*Addon, *AddonComponent) {
	for i := range c.Addons {
		for j := range c.Addons[i].Components {
			if c.Addons[i].Components[j].Name == name {
				return &c.Addons[i], &c.Addons[i].Components[j]
			}
		}
	}
	return nil, nil
}
