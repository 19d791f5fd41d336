// Package localcluster runs a real Kubernetes control plane as local processes:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, on
// free loopback ports, with PKI generated in Go and kwok simulating the nodes.
//
// It is the harness's only cluster provider that needs nothing but Go: the
// binaries come from hack/build-binaries.sh. A Cluster starts in dependency
// order, waits for each component to be ready, keeps every component's log,
// can restart a single component with different flags while the rest keeps
// running, and stops everything it started by PID.
package localcluster

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/workload-aware/apps-harness/pkg/kwoknodes"
)

// Component names a process of the local cluster.
type Component string

const (
	Etcd              Component = "etcd"
	APIServer         Component = "kube-apiserver"
	ControllerManager Component = "kube-controller-manager"
	Scheduler         Component = "kube-scheduler"
	Kwok              Component = "kwok"
	// WASWebhook is the reference implementation's admission side: its
	// validating webhook, registered with the apiserver (the part of the KEPs
	// that would live in kube-apiserver).
	WASWebhook Component = "was-webhook"
	// WASControllerManager is the reference implementation's controller side:
	// the upstream apps controllers with the KEPs' hooks, in place of
	// kube-controller-manager's own.
	WASControllerManager Component = "was-controller-manager"
)

// Components lists every component in start order; Stop goes in reverse. A
// cluster without the reference implementation runs the first five.
var Components = []Component{Etcd, APIServer, ControllerManager, Scheduler, Kwok, WASWebhook, WASControllerManager}

// IsReference reports whether c is part of the reference implementation.
func (c Component) IsReference() bool { return c == WASWebhook || c == WASControllerManager }

// TakesKubeFeatureGates reports whether c accepts Kubernetes --feature-gates.
func (c Component) TakesKubeFeatureGates() bool {
	return c == APIServer || c == ControllerManager || c == Scheduler || c.IsReference()
}

// ReferenceConfig selects the reference implementation of KEP-6276/6277.
type ReferenceConfig struct {
	// Enabled runs was-webhook and was-controller-manager, and turns off the
	// kube-controller-manager controllers they replace.
	Enabled bool
	// Binary is the was-controller-manager binary.
	Binary string
	// FeatureGates are the gates only the reference implementation knows,
	// applied to both of its components on top of Config.FeatureGates.
	FeatureGates map[string]bool
}

// ReplacedControllers are the kube-controller-manager controllers the
// reference implementation runs instead.
var ReplacedControllers = []string{"deployment-controller", "replicaset-controller", "statefulset-controller"}

// DefaultReferenceFeatureGates turns on the KEPs' gates in the reference implementation.
func DefaultReferenceFeatureGates() map[string]bool {
	return map[string]bool{"WorkloadWithDeployment": true, "WorkloadWithStatefulSet": true}
}

// ComponentConfig holds the per-component inputs. The zero value runs the
// component with the cluster's defaults.
type ComponentConfig struct {
	// FeatureGates are applied on top of Config.FeatureGates for this component
	// only (a false value turns a cluster-wide gate off here).
	FeatureGates map[string]bool
	// OmitFeatureGates are left out of this component's --feature-gates
	// altogether: a binary of another Kubernetes version refuses gates it does
	// not know, whatever their value.
	OmitFeatureGates []string
	// ExtraArgs are flags without the leading "--"; a key that the harness also
	// sets replaces the harness's value. Use FeatureGates and
	// Config.RuntimeConfig rather than "feature-gates" or "runtime-config".
	ExtraArgs map[string]string
	// RuntimeConfig is merged on top of Config.RuntimeConfig for the
	// kube-apiserver only (for example "scheduling.k8s.io/v1beta1": "false" to
	// stop serving an API group version on a live cluster).
	RuntimeConfig map[string]string
	// Binary replaces the default binary path (for example another Kubernetes
	// version for skew tests).
	Binary string
}

// DeepCopy returns an independent copy.
func (cc ComponentConfig) DeepCopy() ComponentConfig {
	return ComponentConfig{FeatureGates: maps.Clone(cc.FeatureGates), ExtraArgs: maps.Clone(cc.ExtraArgs),
		RuntimeConfig: maps.Clone(cc.RuntimeConfig), Binary: cc.Binary, OmitFeatureGates: slices.Clone(cc.OmitFeatureGates)}
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
	// Components holds per-component overrides.
	Components map[Component]ComponentConfig
	// Reference is the reference implementation of the KEPs.
	Reference ReferenceConfig
	// Nodes is the simulated node topology kwok manages.
	Nodes kwoknodes.Topology
	// ReadyTimeout bounds the wait for each component and for the nodes.
	ReadyTimeout time.Duration
	// Detach lets the processes outlive the Go process that started them (for
	// `make cluster-up`). Without it every component is killed by the kernel
	// when the starting process dies, so an interrupted test run leaves nothing.
	Detach bool
	// Logf receives progress lines; nil discards them.
	Logf func(format string, args ...any) `json:"-"`
}

// DefaultFeatureGates are the Kubernetes 1.37 gates Workload-Aware Scheduling
// needs: the Workload/PodGroup APIs and gang scheduling, PodGroup-level DRA
// claims, topology-aware placement, and CompositePodGroup (alpha), which
// StatefulSets composed by a parent controller attach to.
func DefaultFeatureGates() map[string]bool {
	return map[string]bool{
		"GenericWorkload":                 true,
		"DRAWorkloadResourceClaims":       true,
		"TopologyAwareWorkloadScheduling": true,
		"CompositePodGroup":               true,
	}
}

// DefaultRuntimeConfig serves scheduling.k8s.io/v1beta1 (disabled by default in
// 1.37), scheduling.k8s.io/v1alpha3 (CompositePodGroup lives only there in
// 1.37) and resource.k8s.io/v1.
func DefaultRuntimeConfig() map[string]string {
	return map[string]string{
		"scheduling.k8s.io/v1beta1":  "true",
		"scheduling.k8s.io/v1alpha3": "true",
		"resource.k8s.io/v1":         "true",
	}
}

// DefaultConfig returns a configuration with the WAS defaults, binaries under
// outputDir/bin as hack/build-binaries.sh lays them out, and the default
// node topology.
func DefaultConfig(outputDir, kubeVersion, workDir string) Config {
	return Config{
		Name:          "was-local",
		WorkDir:       workDir,
		KubeBinDir:    filepath.Join(outputDir, "bin", "kube", kubeVersion),
		ToolsBinDir:   filepath.Join(outputDir, "bin", "tools"),
		FeatureGates:  DefaultFeatureGates(),
		RuntimeConfig: DefaultRuntimeConfig(),
		Components:    map[Component]ComponentConfig{},
		Nodes:         kwoknodes.DefaultTopology(),
		Reference: ReferenceConfig{
			Enabled:      true,
			Binary:       filepath.Join(outputDir, "bin", "was-controller-manager"),
			FeatureGates: DefaultReferenceFeatureGates(),
		},
		ReadyTimeout: 60 * time.Second,
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
	for name, cc := range c.Components {
		if !known(name) {
			return fmt.Errorf("Config.Components[%q]: unknown component; known: %v", name, Components)
		}
		for _, reserved := range []string{"feature-gates", "runtime-config"} {
			if _, ok := cc.ExtraArgs[reserved]; ok {
				return fmt.Errorf("Config.Components[%q].ExtraArgs[%q]: set FeatureGates / Config.RuntimeConfig instead, so gates merge predictably", name, reserved)
			}
		}
		if len(cc.RuntimeConfig) > 0 && name != APIServer {
			return fmt.Errorf("Config.Components[%q].RuntimeConfig: only %s takes --runtime-config", name, APIServer)
		}
		if len(cc.FeatureGates) > 0 && !name.TakesKubeFeatureGates() {
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

func known(name Component) bool {
	for _, c := range Components {
		if c == name {
			return true
		}
	}
	return false
}
