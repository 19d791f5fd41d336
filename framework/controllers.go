package framework

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// Stopping and starting the controllers of the implementation under test
// (what compiles spec.scheduling into Workloads and PodGroups, with the apps
// controllers it runs), for the specs that need them gone for a while: crash
// recovery's seed mode (suites/upgrade/crash.go) and the downgrade to a
// Kubernetes without the KEPs (suites/upgrade/downgrade.go). One seam, two
// ways:
//
//   - the harness's local cluster: was-controller-manager is restarted with
//     --controllers= (none), so the process stays up and healthy, idle;
//   - an existing cluster: --controller-restart-command (env
//     CONTROLLER_RESTART_COMMAND), run as `sh -c "$CMD" sh stop|start`.

// ImplementationControllersStop says how StopImplementationControllers stops
// the controllers on this cluster ("" and why not when it cannot). The words
// are for failure messages ("... left the controllers running").
func ImplementationControllersStop() (how, cannot string) {
	if lc := LocalCluster; lc != nil {
		if !slices.Contains(lc.RunningComponents(), ReferenceControllerManager) {
			return "", "the local cluster runs without the reference implementation (was-controller-manager): no controllers to stop"
		}
		return "the local stop (was-controller-manager --controllers=)", ""
	}
	if TestContext.ControllerRestartCommand == "" {
		return "", "stopping the implementation's controllers on an existing cluster needs --controller-restart-command " +
			"(a shell command that stops ($1=stop) and starts ($1=start) the controllers under test)"
	}
	return "the controller-restart-command's stop", ""
}

// RequireImplementationControllersStop skips the spec, saying why, unless
// StopImplementationControllers can stop the controllers here; it returns
// how it will. Call it before the spec creates anything.
func RequireImplementationControllersStop() (how string) {
	ginkgo.GinkgoHelper()
	how, cannot := ImplementationControllersStop()
	if cannot != "" {
		ginkgo.Skip(cannot)
	}
	return how
}

// StopImplementationControllers stops the implementation's controllers and
// returns start, which starts them again (once; later calls do nothing). A
// DeferCleanup starts them after the spec if the spec did not, before the
// spec's namespace is deleted. It skips the spec where they cannot be
// stopped (see RequireImplementationControllersStop) and fails it if the
// stop fails.
func StopImplementationControllers(ctx context.Context) (start func(context.Context)) {
	ginkgo.GinkgoHelper()
	RequireImplementationControllersStop()
	if LocalCluster != nil {
		// Reconfigure registers the restore itself, and its restore runs once.
		return Reconfigure(ctx, ReconfigureInput{Cluster: LocalCluster, Changes: []ComponentChange{{
			Component: ReferenceControllerManager, ComponentConfig: localcluster.ComponentConfig{ExtraArgs: map[string]string{"controllers": ""}},
		}}})
	}
	cmd := TestContext.ControllerRestartHook().Command // a relative path resolved (hooks.go)
	runControllerRestartCommand(ctx, cmd, "stop")
	var once sync.Once
	start = func(ctx context.Context) { once.Do(func() { runControllerRestartCommand(ctx, cmd, "start") }) }
	ginkgo.DeferCleanup(start)
	return start
}

// runControllerRestartCommand runs the user's command with action, and fails
// the spec if it fails.
func runControllerRestartCommand(ctx context.Context, cmd, action string) {
	ginkgo.GinkgoHelper()
	c := exec.CommandContext(ctx, "sh", "-c", cmd, "sh", action)
	c.Env = append(os.Environ(), "WAS_CONTROLLER_ACTION="+action)
	out, err := c.CombinedOutput()
	ginkgo.GinkgoWriter.Printf("controller %s (%s): %s\n", action, cmd, out)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "--controller-restart-command %s failed: %s", action, out)
}
