package framework

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"

	"github.com/onsi/ginkgo/v2"

	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// The vendor hook: --reconfigure-command (env RECONFIGURE_COMMAND) is run as
//
//	sh -c "$CMD" sh <component> <feature-gates> <runtime-config>
//
// and must return once the component runs again with the cluster's normal
// settings plus exactly these feature gates ("A=false,B=true") and
// kube-apiserver runtime-config entries ("scheduling.k8s.io/v1beta1=false").
// Each call replaces the previous one's for that component; empty values mean
// "back to normal". The suite always restores what it changed. Before any
// spec it calls the hook once as `sh -c "$CMD" sh check "" ""`, which must
// change nothing (hooks.go).
//
// <component> is where the KEPs put each side of a gate: kube-apiserver,
// kube-controller-manager, kube-scheduler, and, for an implementation outside
// those binaries, implementation-admission (what validates spec.scheduling)
// and implementation-controllers (what compiles it into Workloads and
// PodGroups). hack/reconfigure-local.sh is the hook of a `make cluster-up`
// cluster.

// HookComponent is the name the vendor hook receives for a component.
func HookComponent(c localcluster.Component) string {
	switch c {
	case ReferenceWebhook:
		return "implementation-admission"
	case ReferenceControllerManager:
		return "implementation-controllers"
	}
	return string(c)
}

type hookReconfigurer struct {
	mu sync.Mutex
	// current is what the hook was last told per component (nil: normal).
	current map[localcluster.Component]localcluster.ComponentConfig
}

var commandReconfigurer = &hookReconfigurer{current: map[localcluster.Component]localcluster.ComponentConfig{}}

func (*hookReconfigurer) cannot(c ComponentChange) string {
	if c.Binary != "" || len(c.OmitFeatureGates) > 0 || len(c.ExtraArgs) > 0 {
		return fmt.Sprintf("needs the harness's local cluster: the vendor hook changes feature gates and runtime-config only, not %s", c)
	}
	return ""
}

func (h *hookReconfigurer) apply(ctx context.Context, change ComponentChange) (func(context.Context) error, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	previous, had := h.current[change.Component]
	next := previous.Merge(change.ComponentConfig)
	if err := runHook(ctx, change.Component, next); err != nil {
		return nil, err
	}
	h.current[change.Component] = next
	return func(ctx context.Context) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if err := runHook(ctx, change.Component, previous); err != nil {
			return err
		}
		if had {
			h.current[change.Component] = previous
		} else {
			delete(h.current, change.Component)
		}
		return nil
	}, nil
}

// runHook tells the hook to run component with cc's gates and runtime-config.
func runHook(ctx context.Context, component localcluster.Component, cc localcluster.ComponentConfig) error {
	args := []string{"-c", TestContext.ReconfigureHook().Command, "sh", HookComponent(component), joinSorted(cc.FeatureGates), joinSorted(cc.RuntimeConfig)}
	ctx, cancel := context.WithTimeout(ctx, 3*TestContext.Timeouts.ClusterStart)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", args...)
	// The same values in the environment: a COMMAND that is a bare script path
	// gets no positional arguments from `sh -c`, and can read these instead.
	cmd.Env = append(os.Environ(), "WAS_COMPONENT="+args[3], "WAS_FEATURE_GATES="+args[4], "WAS_RUNTIME_CONFIG="+args[5])
	out, err := cmd.CombinedOutput()
	ginkgo.GinkgoWriter.Printf("reconfigure-command %q: %s\n", args[3:], out)
	if err != nil {
		return fmt.Errorf("--reconfigure-command %s %q %q: %w; output: %s", args[3], args[4], args[5], err, out)
	}
	return nil
}

// joinSorted renders a map as "k=v,k=v" in key order.
func joinSorted[V any](m map[string]V) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, m[k]))
	}
	return strings.Join(parts, ",")
}
