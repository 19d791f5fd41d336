package framework

import (
	"context"
	"fmt"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// ComponentChange is one component's new settings for Reconfigure: the
// fields of localcluster.ComponentConfig, merged over what the component
// runs with now (ComponentConfig.Merge: a false gate turns a gate off,
// Binary replaces the binary for version skew, ExtraArgs are flags such as
// the reference controller-manager's crash-after).
type ComponentChange struct {
	Component localcluster.Component
	localcluster.ComponentConfig
}

func (c ComponentChange) String() string {
	return fmt.Sprintf("%s with %s", c.Component, c.ComponentConfig)
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
			*cc = cc.Merge(change.ComponentConfig)
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

// GateOn returns ComponentChanges that set gate to on for each component.
func GateOn(gate FeatureGate, on bool, components ...localcluster.Component) []ComponentChange {
	changes := make([]ComponentChange, 0, len(components))
	for _, c := range components {
		changes = append(changes, ComponentChange{Component: c, ComponentConfig: localcluster.ComponentConfig{
			FeatureGates: map[string]bool{string(gate): on},
		}})
	}
	return changes
}
