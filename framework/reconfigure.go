package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	// Version runs the component at another Kubernetes version (version
	// skew, a downgrade): on the local cluster the binary of
	// OutputDir/bin/kube/<Version>/, through a vendor hook its image at that
	// tag (the hook's <version>). An older component does not know this
	// cluster's gates: give it OmitFeatureGates, which a hook reads as "only
	// the gates given".
	Version string
}

func (c ComponentChange) String() string {
	if c.Version != "" {
		return fmt.Sprintf("%s %s with %s", c.Component, c.Version, c.ComponentConfig)
	}
	return fmt.Sprintf("%s with %s", c.Component, c.ComponentConfig)
}

// binaryOf is the local cluster's binary of component at version.
func binaryOf(component localcluster.Component, version string) string {
	return filepath.Join(TestContext.OutputDir, "bin", "kube", version, string(component))
}

// ReconfigureInput is the input of Reconfigure.
type ReconfigureInput struct {
	// Cluster is the harness's local cluster to restart components of. Nil
	// (the usual) uses the suite's reconfigurer: the local cluster when the
	// suite started one, else the vendor's --reconfigure-command.
	Cluster *localcluster.Cluster
	// Changes are applied in order, one restart each. Order them as an
	// operator would: for an upgrade the apiserver first, for a downgrade last.
	Changes []ComponentChange
	// KeepAfterSpec leaves the changes in place after the spec; by default a
	// DeferCleanup restores every changed component's previous settings, in
	// reverse order, so the next spec sees the suite's cluster.
	KeepAfterSpec bool
}

// Reconfigure restarts components of the cluster under test with new gates,
// runtime-config or binaries, the way an operator upgrades or downgrades one
// component at a time, and (unless KeepAfterSpec) restores them when the
// spec ends. On the harness's local cluster it restarts the processes; on a
// vendor's cluster it runs --reconfigure-command; where neither can make a
// change (no hook, or a change only a local cluster can make, such as
// another binary) it skips the spec with the reason. Call RequireReconfigure
// first in a spec, so it skips before it creates anything. It fails the spec
// if a restart fails. The returned func restores the previous settings at
// once (for a spec that goes back mid-way); the cleanup then has nothing left
// to do.
func Reconfigure(ctx context.Context, in ReconfigureInput) (restore func(context.Context)) {
	ginkgo.GinkgoHelper()
	r := reconfigurerFor(in.Cluster, in.Changes...)
	var restores []func(context.Context)
	for _, change := range in.Changes {
		ginkgo.By("restarting " + change.String())
		undo, err := r.apply(ctx, change)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "restarting %s", change)
		component := change.Component
		restores = append(restores, func(ctx context.Context) {
			ginkgo.By(fmt.Sprintf("restoring %s to its previous settings", component))
			gomega.Expect(undo(ctx)).To(gomega.Succeed(), "restoring %s", component)
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

// RequireReconfigure skips the spec, saying why, unless the cluster under
// test can make these changes (see Reconfigure).
func RequireReconfigure(changes ...ComponentChange) {
	ginkgo.GinkgoHelper()
	reconfigurerFor(nil, changes...)
}

// reconfigurer makes ComponentChanges on one kind of cluster.
type reconfigurer interface {
	// cannot says why change cannot be made here ("" when it can).
	cannot(change ComponentChange) string
	// apply makes change and returns how to undo it.
	apply(ctx context.Context, change ComponentChange) (undo func(context.Context) error, err error)
}

// reconfigurerFor returns the reconfigurer of lc (or of the suite's cluster
// when lc is nil), skipping the spec when it cannot make every change.
func reconfigurerFor(lc *localcluster.Cluster, changes ...ComponentChange) reconfigurer {
	ginkgo.GinkgoHelper()
	var r reconfigurer
	switch {
	case lc != nil:
		r = localReconfigurer{lc}
	case LocalCluster != nil:
		r = localReconfigurer{LocalCluster}
	case TestContext.ReconfigureCommand != "":
		r = commandReconfigurer
	default:
		ginkgo.Skip("reconfigures cluster components: give the suite --reconfigure-command (env RECONFIGURE_COMMAND), " +
			"run as `sh -c \"$CMD\" sh <component> <feature-gates> <runtime-config>` (see docs/vendor-guide.md), or run it on the harness's local cluster")
	}
	for _, c := range changes {
		if why := r.cannot(c); why != "" {
			ginkgo.Skip(why)
		}
	}
	return r
}

// localReconfigurer restarts the local cluster's processes.
type localReconfigurer struct{ lc *localcluster.Cluster }

func (localReconfigurer) cannot(c ComponentChange) string {
	if c.Version == "" || c.Binary != "" {
		return ""
	}
	if b := binaryOf(c.Component, c.Version); !fileExists(b) {
		return fmt.Sprintf("needs %s for %s: build it with `KUBE_VERSION=%s KUBE_BINARIES=%s hack/build-binaries.sh` (make e2e builds the skew kube-scheduler)", b, c, c.Version, c.Component)
	}
	return ""
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func (l localReconfigurer) apply(ctx context.Context, change ComponentChange) (func(context.Context) error, error) {
	if change.Version != "" && change.Binary == "" {
		change.Binary = binaryOf(change.Component, change.Version)
	}
	var previous localcluster.ComponentConfig
	err := l.lc.Restart(ctx, change.Component, func(cc *localcluster.ComponentConfig) {
		previous = cc.DeepCopy()
		*cc = cc.Merge(change.ComponentConfig)
	})
	return func(ctx context.Context) error {
		return l.lc.Restart(ctx, change.Component, func(cc *localcluster.ComponentConfig) { *cc = previous })
	}, err
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
