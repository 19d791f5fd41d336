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
	var once sync.Once
	restore = func(ctx context.Context) {
		once.Do(func() {
			for i := len(restores) - 1; i >= 0; i-- {
				restores[i](ctx)
			}
		})
	}
	// Registered before the first change: a change that fails half-way must
	// still be undone, with those made before it.
	if !in.KeepAfterSpec {
		ginkgo.DeferCleanup(restore)
	}
	for _, change := range in.Changes {
		err := applyChange(ctx, r, change, &restores)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "restarting %s", change)
	}
	return restore
}

// applyChange makes one change and appends its undo to restores, also when
// the change failed (the component may be half-changed).
func applyChange(ctx context.Context, r reconfigurer, change ComponentChange, restores *[]func(context.Context)) error {
	ginkgo.By("restarting " + change.String())
	undo, err := r.apply(ctx, change)
	if undo != nil {
		component := change.Component
		*restores = append(*restores, func(ctx context.Context) {
			ginkgo.By(fmt.Sprintf("restoring %s to its previous settings", component))
			gomega.Expect(undo(ctx)).To(gomega.Succeed(), "restoring %s", component)
		})
	}
	return err
}

// Trials restarts components of the cluster under test with one setting
// after another, where a component that does not come back is an answer,
// not a failure: Try returns the error (the component refused those
// settings, or the hook could not make them). For settings an
// implementation may refuse to run with, such as a gate on whose dependency
// is off. Each component's original settings are restored once, when the
// spec ends. NewTrials skips the spec, as RequireReconfigure does, where the
// cluster cannot make the changes.
type Trials struct {
	r        reconfigurer
	restores []func(context.Context)
	tried    map[localcluster.Component]bool
}

// NewTrials returns Trials for changes (the ones the spec will try).
func NewTrials(changes ...ComponentChange) *Trials {
	ginkgo.GinkgoHelper()
	t := &Trials{r: reconfigurerFor(nil, changes...), tried: map[localcluster.Component]bool{}}
	ginkgo.DeferCleanup(func(ctx context.Context) {
		for i := len(t.restores) - 1; i >= 0; i-- {
			t.restores[i](ctx)
		}
	})
	return t
}

// Try restarts change.Component with change's settings, merged over its
// current ones as Reconfigure's are.
func (t *Trials) Try(ctx context.Context, change ComponentChange) error {
	var restores []func(context.Context)
	err := applyChange(ctx, t.r, change, &restores)
	if !t.tried[change.Component] {
		// The first undo puts back the original settings; a later one only
		// an earlier trial's.
		t.tried[change.Component] = true
		t.restores = append(t.restores, restores...)
	}
	return err
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
