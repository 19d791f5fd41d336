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
//	sh -c "$CMD" sh <component> <feature-gates> <runtime-config> <version> <flags>
//
// and must return once the component runs again with the cluster's normal
// settings plus exactly these feature gates ("A=false,B=true"),
// kube-apiserver runtime-config entries ("scheduling.k8s.io/v1beta1=false"),
// Kubernetes version ("v1.36.3": that version's component, which gets only
// the given gates, since it does not know this cluster's) and flags
// ("--controllers=*,bootstrapsigner --other=x", space-separated). A hook that
// cannot change versions or flags exits non-zero when asked to. Each call
// replaces the previous one's for that component; all-empty values mean
// "back to normal". The suite always restores what it changed. Before any
// spec it calls the hook once as `sh -c "$CMD" sh check "" "" "" ""`, which
// must change nothing (hooks.go). hack/hooks/kubeadm/ is the hook of any
// kubeadm cluster (kind included).
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
	current map[localcluster.Component]hookSettings
}

// hookSettings are one component's settings as the hook is told them.
type hookSettings struct {
	localcluster.ComponentConfig
	Version string
}

// Merge applies change over s, as ComponentConfig.Merge does.
func (s hookSettings) Merge(change ComponentChange) hookSettings {
	out := hookSettings{ComponentConfig: s.ComponentConfig.Merge(change.ComponentConfig), Version: s.Version}
	if change.Version != "" {
		out.Version = change.Version
	}
	return out
}

var commandReconfigurer = &hookReconfigurer{current: map[localcluster.Component]hookSettings{}}

func (*hookReconfigurer) cannot(c ComponentChange) string {
	switch {
	case c.Binary != "":
		return fmt.Sprintf("needs the harness's local cluster: a vendor hook runs versions (<version>), not binaries (%s)", c)
	case len(c.OmitFeatureGates) > 0 && c.Version == "":
		return fmt.Sprintf("needs the harness's local cluster: a vendor hook drops the cluster's gates only for another version (%s)", c)
	}
	return ""
}

func (h *hookReconfigurer) apply(ctx context.Context, change ComponentChange) (func(context.Context) error, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	previous, had := h.current[change.Component]
	next := previous.Merge(change)
	err := runHook(ctx, change.Component, next)
	if err == nil {
		h.current[change.Component] = next
	}
	// The undo is returned even when the hook failed: a component that did
	// not come back with next may still have been changed (a patched
	// DaemonSet, a rewritten manifest), and only telling the hook the
	// previous settings again puts it back.
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
	}, err
}

// runHook tells the hook to run component with s's settings.
func runHook(ctx context.Context, component localcluster.Component, s hookSettings) error {
	args := []string{"-c", TestContext.ReconfigureHook().Command, "sh", HookComponent(component),
		joinSorted(s.FeatureGates), joinSorted(s.RuntimeConfig), s.Version, hookFlags(s.ExtraArgs)}
	ctx, cancel := context.WithTimeout(ctx, 3*TestContext.Timeouts.ClusterStart)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", args...)
	// The same values in the environment: a COMMAND that is a bare script path
	// gets no positional arguments from `sh -c`, and can read these instead.
	cmd.Env = append(os.Environ(), "WAS_COMPONENT="+args[3], "WAS_FEATURE_GATES="+args[4], "WAS_RUNTIME_CONFIG="+args[5],
		"WAS_VERSION="+args[6], "WAS_ARGS="+args[7])
	out, err := cmd.CombinedOutput()
	ginkgo.GinkgoWriter.Printf("reconfigure-command %q: %s\n", args[3:], out)
	if err != nil {
		return fmt.Errorf("--reconfigure-command %s %q %q %q %q: %w; output: %s", args[3], args[4], args[5], args[6], args[7], err, out)
	}
	return nil
}

// hookFlags renders flags as the hook's <flags>: "--a=x --b=y" in name order.
func hookFlags(flags map[string]string) string {
	parts := make([]string, 0, len(flags))
	for _, k := range slices.Sorted(maps.Keys(flags)) {
		parts = append(parts, "--"+k+"="+flags[k])
	}
	return strings.Join(parts, " ")
}

// joinSorted renders a map as "k=v,k=v" in key order.
func joinSorted[V any](m map[string]V) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, m[k]))
	}
	return strings.Join(parts, ",")
}
