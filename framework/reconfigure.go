package framework

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// ComponentChange is one component's new settings for Reconfigure. Gates and
// RuntimeConfig are merged over what the component runs with now (a false
// value turns a gate off); Binary, when set, replaces the binary (version skew).
type ComponentChange struct {
	Component     localcluster.Component
	Gates         map[string]bool
	RuntimeConfig map[string]string
	Binary        string
	// OmitGates are left out of the component's --feature-gates (a binary of
	// an older version refuses gates it does not know).
	OmitGates []string
	// Args are flags (without "--") merged over the component's extra flags,
	// e.g. the reference controller-manager's crash-after.
	Args map[string]string
}

func (c ComponentChange) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c.Gates)) {
		parts = append(parts, fmt.Sprintf("%s=%t", k, c.Gates[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(c.RuntimeConfig)) {
		parts = append(parts, fmt.Sprintf("runtime-config %s=%s", k, c.RuntimeConfig[k]))
	}
	if c.Binary != "" {
		parts = append(parts, "binary "+c.Binary)
	}
	if len(c.OmitGates) > 0 {
		parts = append(parts, "without gates "+strings.Join(c.OmitGates, ","))
	}
	for _, k := range slices.Sorted(maps.Keys(c.Args)) {
		parts = append(parts, fmt.Sprintf("--%s=%s", k, c.Args[k]))
	}
	return fmt.Sprintf("%s with %s", c.Component, strings.Join(parts, ", "))
}

// ReconfigureInput is the input of Reconfigure.
type ReconfigureInput struct {
	Cluster *localcluster.Cluster
	// Changes are applied in order, one restart each. Order them as an
	// operator would: for an upgrade the apiserver first, for a downgrade last.
	Changes []ComponentChange
	// KeepAfterSpec leaves the changes in place after the spec; by default a
	// DeferCleanup restores every changed component's previous settings, in
	// reverse order, so the next spec sees the suite's cluster.
	KeepAfterSpec bool
}

// Reconfigure restarts components of the harness's local cluster with new
// gates, runtime-config or binaries, the way an operator upgrades or downgrades
// one component at a time, and (unless KeepAfterSpec) restores them when the
// spec ends. It fails the spec if a restart fails. The returned func restores
// the previous settings at once (for a spec that goes back mid-way); the
// cleanup then has nothing left to do.
func Reconfigure(ctx context.Context, in ReconfigureInput) (restore func(context.Context)) {
	ginkgo.GinkgoHelper()
	var restores []func(context.Context)
	for _, change := range in.Changes {
		var previous localcluster.ComponentConfig
		ginkgo.By("restarting " + change.String())
		err := in.Cluster.Restart(ctx, change.Component, func(cc *localcluster.ComponentConfig) {
			previous = cc.DeepCopy()
			applyChange(cc, change)
		})
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "restarting %s", change)
		component := change.Component
		restores = append(restores, func(ctx context.Context) {
			ginkgo.By(fmt.Sprintf("restoring %s to its previous settings", component))
			gomega.Expect(in.Cluster.Restart(ctx, component, func(cc *localcluster.ComponentConfig) {
				*cc = previous
			})).To(gomega.Succeed(), "restoring %s", component)
		})
	}
	var once sync.Once
	restore = func(ctx context.Context) {
		once.Do(func() {
			for i := len(restores) - 1; i >= 0; i-- {
				restores[i](ctx)
			}
		})
	}
	if !in.KeepAfterSpec {
		ginkgo.DeferCleanup(restore)
	}
	return restore
}

func applyChange(cc *localcluster.ComponentConfig, change ComponentChange) {
	if len(change.Gates) > 0 {
		if cc.FeatureGates == nil {
			cc.FeatureGates = map[string]bool{}
		}
		maps.Copy(cc.FeatureGates, change.Gates)
	}
	if len(change.RuntimeConfig) > 0 {
		if cc.RuntimeConfig == nil {
			cc.RuntimeConfig = map[string]string{}
		}
		maps.Copy(cc.RuntimeConfig, change.RuntimeConfig)
	}
	if change.Binary != "" {
		cc.Binary = change.Binary
	}
	cc.OmitFeatureGates = append(cc.OmitFeatureGates, change.OmitGates...)
	if len(change.Args) > 0 {
		if cc.ExtraArgs == nil {
			cc.ExtraArgs = map[string]string{}
		}
		maps.Copy(cc.ExtraArgs, change.Args)
	}
}

// GateOn returns ComponentChanges that set gate to on for each component.
func GateOn(gate FeatureGate, on bool, components ...localcluster.Component) []ComponentChange {
	changes := make([]ComponentChange, 0, len(components))
	for _, c := range components {
		changes = append(changes, ComponentChange{Component: c, Gates: map[string]bool{string(gate): on}})
	}
	return changes
}
