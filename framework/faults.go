package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// Faults in the middle of work, for the Fault specs (suites/upgrade/faults.go):
// a control-plane component restarts, a node stops and starts again, etcd's
// history is compacted, the implementation's controller process is killed.
// One seam, two ways:
//
//   - the harness's local cluster does them itself (localcluster: Restart,
//     RestartTogether, StopNode/StartNode, CompactEtcd, Kill);
//   - an existing cluster does them through the vendor hooks:
//     --fault-command (env FAULT_COMMAND), run as
//
//     sh -c "$CMD" sh <action> <target>
//
//     with the two also in $WAS_FAULT_ACTION and $WAS_FAULT_TARGET:
//
//     restart <component>  etcd, kube-apiserver, kube-controller-manager or
//     kube-scheduler: its process restarted with the same settings, the
//     rest running on; control-plane: all of them at once, as a restart
//     of the control-plane node (machine or container) does, one node at a
//     time where there are several. Returns once it serves again.
//     stop-node <node>     the node goes off (machine or container: its
//     kubelet and its pods with it). Returns once it is off; the suite
//     waits for the Node to turn NotReady itself.
//     start-node <node>    the node runs again. Returns once the Node is Ready.
//     compact-etcd         etcd's history compacted up to its current
//     revision: a watch resuming from an older resourceVersion that the
//     apiserver's watch cache does not hold gets 410 Gone.
//     check                before any spec (CheckHooks): exit 0, changing
//     nothing, when the hook can work on this cluster.
//     check <action>       before the first spec that needs <action>: exit 0,
//     changing nothing, when the hook can do it here; non-zero (saying
//     why) and those specs skip with that output.
//
//     and the controller kill through --controller-restart-command's kill.
//
// hack/hooks/kubeadm/fault.sh is the fault hook of any kubeadm cluster (kind
// included); hack/fault-local.sh is the one of a `make cluster-up` cluster.

// The fault hook's actions.
const (
	FaultRestart     = "restart"
	FaultStopNode    = "stop-node"
	FaultStartNode   = "start-node"
	FaultCompactEtcd = "compact-etcd"
)

// ControlPlane is the restart target of every control-plane component at
// once (RestartComponent).
const ControlPlane localcluster.Component = "control-plane"

// ControlPlaneComponents are what ControlPlane restarts on the local cluster:
// the control plane and the implementation's processes, which run beside it
// (on kind they are DaemonSet pods of the control-plane node); kwok, the
// nodes, keeps running.
func controlPlaneComponents(lc *localcluster.Cluster) []localcluster.Component {
	return slices.DeleteFunc(lc.RunningComponents(), func(c localcluster.Component) bool { return c == localcluster.Kwok })
}

// faultChecks caches each action's `check <action>` answer ("" when the hook
// can do it) for the run: the specs that need it are Serial, on process 1.
var faultChecks sync.Map

// faultCannot says why action cannot be done on this cluster ("" when it can).
func faultCannot(ctx context.Context, action string) string {
	if LocalCluster != nil {
		return ""
	}
	h := TestContext.FaultHook()
	if h.Given == "" {
		return fmt.Sprintf("the fault %q on an existing cluster needs --fault-command (env FAULT_COMMAND), a shell command run as "+
			"`sh -c \"$CMD\" sh <action> <target>` (restart <component>, stop-node <node>, start-node <node>, compact-etcd; docs/vendor-guide.md); "+
			"hack/hooks/kubeadm/fault.sh is the one of a kubeadm cluster, kind included", action)
	}
	if why, ok := faultChecks.Load(action); ok {
		return why.(string)
	}
	why := ""
	if err := h.check(ctx, []string{HookCheck, action}, []string{"WAS_FAULT_ACTION=" + HookCheck, "WAS_FAULT_TARGET=" + action}); err != nil {
		why = fmt.Sprintf("the fault hook cannot do %q on this cluster (it answered `check %s` with a failure): %v", action, action, err)
	}
	faultChecks.Store(action, why)
	return why
}

// RequireFaults skips the spec, saying why, unless every action can be done
// on this cluster. Call it before the spec creates anything.
func RequireFaults(ctx context.Context, actions ...string) {
	ginkgo.GinkgoHelper()
	for _, a := range actions {
		if why := faultCannot(ctx, a); why != "" {
			ginkgo.Skip(why)
		}
	}
}

// RestartComponent restarts a control-plane component (localcluster.Etcd,
// APIServer, ControllerManager, Scheduler) with its settings unchanged, or
// all of them at once (ControlPlane), and returns once it serves again. It
// skips where it cannot and fails the spec if the restart fails.
func RestartComponent(ctx context.Context, component localcluster.Component) {
	ginkgo.GinkgoHelper()
	RequireFaults(ctx, FaultRestart)
	if lc := LocalCluster; lc != nil {
		var err error
		if component == ControlPlane {
			err = lc.RestartTogether(ctx, controlPlaneComponents(lc)...)
		} else {
			err = lc.Restart(ctx, component, nil)
		}
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "restarting %s", component)
		return
	}
	gomega.Expect(runFault(ctx, FaultRestart, string(component))).To(gomega.Succeed())
}

// StopNode stops node (its kubelet and pods stop with it) and returns start,
// which starts it again and returns once the Node is Ready (once; later
// calls do nothing). A DeferCleanup starts it after the spec if the spec did
// not. It skips where nodes cannot be stopped and started.
func StopNode(ctx context.Context, node string) (start func(context.Context)) {
	ginkgo.GinkgoHelper()
	RequireFaults(ctx, FaultStopNode, FaultStartNode)
	lc := LocalCluster
	if lc != nil {
		gomega.Expect(lc.StopNode(ctx, node)).To(gomega.Succeed(), "stopping node %s", node)
	} else {
		gomega.Expect(runFault(ctx, FaultStopNode, node)).To(gomega.Succeed())
	}
	var once sync.Once
	start = func(ctx context.Context) {
		ginkgo.GinkgoHelper()
		once.Do(func() {
			if lc != nil {
				gomega.Expect(lc.StartNode(ctx, node)).To(gomega.Succeed(), "starting node %s", node)
				return
			}
			gomega.Expect(runFault(ctx, FaultStartNode, node)).To(gomega.Succeed())
		})
	}
	ginkgo.DeferCleanup(start)
	return start
}

// CompactEtcd compacts etcd's history up to its current revision. It skips
// where it cannot.
func CompactEtcd(ctx context.Context) {
	ginkgo.GinkgoHelper()
	RequireFaults(ctx, FaultCompactEtcd)
	if lc := LocalCluster; lc != nil {
		_, err := lc.CompactEtcd(ctx)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "compacting etcd")
		return
	}
	gomega.Expect(runFault(ctx, FaultCompactEtcd, "")).To(gomega.Succeed())
}

// runFault runs the fault hook with action and target.
func runFault(ctx context.Context, action, target string) error {
	h := TestContext.FaultHook()
	cmd := exec.CommandContext(ctx, "sh", "-c", h.Command, "sh", action, target)
	cmd.Env = append(os.Environ(), "WAS_FAULT_ACTION="+action, "WAS_FAULT_TARGET="+target)
	out, err := cmd.CombinedOutput()
	ginkgo.GinkgoWriter.Printf("fault-command %s %s: %s\n", action, target, out)
	if err != nil {
		return fmt.Errorf("--fault-command %s %q: %w; output:\n%s", action, target, err, lastLines(out, 20))
	}
	return nil
}

// The controller kill: the implementation's controller process (the one
// that leads, where several run) gets SIGKILL wherever it is in its writes,
// and is started again as its supervisor would (a kubelet restarts the
// container). On the local cluster, was-controller-manager is killed and
// started again with the same flags; on an existing cluster,
// --controller-restart-command's kill does it (`sh -c "$CMD" sh kill`, also
// $WAS_CONTROLLER_ACTION=kill), returning once the controllers run again.

// ControllerKillAction is the controller-restart hook's kill verb.
const ControllerKillAction = "kill"

// RequireControllerKill skips the spec, saying why, unless
// KillImplementationControllers can work here; it returns how it will kill.
func RequireControllerKill() (how string) {
	ginkgo.GinkgoHelper()
	if lc := LocalCluster; lc != nil {
		if !slices.Contains(lc.RunningComponents(), ReferenceControllerManager) {
			ginkgo.Skip("the local cluster runs without the reference implementation (was-controller-manager): no controller to kill")
		}
		return "SIGKILL to the local " + string(ReferenceControllerManager)
	}
	if TestContext.ControllerRestartCommand == "" {
		ginkgo.Skip("killing the implementation's controllers on an existing cluster needs --controller-restart-command (env CONTROLLER_RESTART_COMMAND), " +
			"run as `sh -c \"$CMD\" sh kill` (SIGKILL to the controller process that leads, returning once it runs again; docs/vendor-guide.md)")
	}
	return "the controller-restart-command's kill"
}

// KillImplementationControllers kills the implementation's controller
// process (above) and returns once it runs again. It skips where it cannot
// and fails the spec if the kill fails.
func KillImplementationControllers(ctx context.Context) {
	ginkgo.GinkgoHelper()
	how := RequireControllerKill()
	ginkgo.By("killing the implementation's controllers: " + how)
	if lc := LocalCluster; lc != nil {
		gomega.Expect(lc.Kill(ctx, ReferenceControllerManager)).To(gomega.Succeed(), "killing %s", ReferenceControllerManager)
		return
	}
	h := TestContext.ControllerRestartHook()
	cmd := exec.CommandContext(ctx, "sh", "-c", h.Command, "sh", ControllerKillAction)
	cmd.Env = append(os.Environ(), "WAS_CONTROLLER_ACTION="+ControllerKillAction)
	out, err := cmd.CombinedOutput()
	ginkgo.GinkgoWriter.Printf("controller-restart-command kill: %s\n", out)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "--controller-restart-command kill failed: %s", strings.TrimSpace(lastLines(out, 20)))
}
