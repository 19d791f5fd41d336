package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/workload-aware/apps-harness/pkg/kubeadmhook"
)

const kubeadmUsage = `usage: was-harness kubeadm [flags] VERB
  reconfigure COMPONENT FEATURE_GATES RUNTIME_CONFIG [VERSION [FLAGS]]
                 the --reconfigure-command protocol (docs/vendor-guide.md): COMPONENT runs with
                 its pristine settings plus these (all empty: back to pristine)
  controllers stop|start|kill
                 the --controller-restart-command protocol
  fault ACTION [TARGET]
                 the --fault-command protocol: restart etcd|kube-apiserver|kube-controller-manager|
                 kube-scheduler|control-plane, stop-node NODE, start-node NODE, compact-etcd,
                 check [ACTION]
  check          change nothing; exit 0 when the hooks can work on this cluster
  restore        put back everything the hooks changed (an interrupted run)`

// kubeadmCmd runs the vendor hooks for a kubeadm cluster
// (hack/hooks/kubeadm/ calls it; pkg/kubeadmhook does the work).
func kubeadmCmd(args []string) error {
	fs := flag.NewFlagSet("kubeadm", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), kubeadmUsage); fs.PrintDefaults() }
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "the cluster's kubeconfig (env KUBECONFIG)")
	nodeExec := fs.String("node-exec", envOr("NODE_EXEC", kubeadmhook.DefaultNodeExec), "command that runs `sh -c SCRIPT` as root on a node, {node} replaced by its name (env NODE_EXEC; kind: the default; ssh: 'ssh root@{node}')")
	nodeControl := fs.String("node-control", envOr("NODE_CONTROL", kubeadmhook.DefaultNodeControl), "command that stops or starts a node, {action} replaced by stop or start and {node} by its name (env NODE_CONTROL; kind: the default, or 'podman {action} {node}'; ssh: 'ssh root@{node} systemctl {action} kubelet containerd')")
	ns := fs.String("namespace", envOr("IMPLEMENTATION_NAMESPACE", "was-system"), "namespace of the implementation's DaemonSets (env IMPLEMENTATION_NAMESPACE)")
	admission := fs.String("admission", envOr("IMPLEMENTATION_ADMISSION", "was-webhook"), "DaemonSet of the admission side (env IMPLEMENTATION_ADMISSION)")
	controllers := fs.String("controllers", envOr("IMPLEMENTATION_CONTROLLERS", "was-controller-manager"), "DaemonSet of the controller side (env IMPLEMENTATION_CONTROLLERS)")
	webhook := fs.String("webhook-configuration", envOr("IMPLEMENTATION_WEBHOOK_CONFIGURATION", "was-harness-apps-admission"), "admission webhook configuration whose caBundle the admission side publishes; empty: do not wait for it")
	lease := fs.String("lease", envOr("IMPLEMENTATION_LEASE", "was-system/was-controller-manager"), "namespace/name of the controllers' leader election Lease; empty: do not wait for it")
	probeAnnotation := fs.String("admission-probe-annotation", envOr("IMPLEMENTATION_ADMISSION_PROBE_ANNOTATION", "scheduling.was-harness.io/deployment-scheduling"), "annotation on the dry-run Deployment that proves the webhook is reached after a restart (the reference's webhook sees only Deployments carrying its intent annotation); empty: a plain Deployment")
	timeout := fs.Duration("timeout", 5*time.Minute, "bound of each wait")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return fmt.Errorf("%s", kubeadmUsage)
	}
	if *kubeconfig == "" {
		return fmt.Errorf("kubeadm: no kubeconfig: set KUBECONFIG or --kubeconfig")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeadm: kubeconfig %s: %w", *kubeconfig, err)
	}
	cfg.Timeout = 15 * time.Second // a restarting apiserver must not hang a wait
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	h := &kubeadmhook.Hook{Client: cs, Exec: kubeadmhook.NodeExec{Template: *nodeExec}, Control: kubeadmhook.NodeControl{Template: *nodeControl}, Namespace: *ns,
		AdmissionDaemonSet: *admission, ControllersDaemonSet: *controllers, WebhookConfiguration: *webhook, AdmissionProbeAnnotation: *probeAnnotation, Lease: *lease, Timeout: *timeout,
		Logf: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "[kubeadm-hook %s] "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
		}}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	switch verb := rest[0]; {
	case verb == "reconfigure" && len(rest) >= 2 && len(rest) <= 6:
		a := append(rest[1:], "", "", "", "")
		component := a[0]
		if component == "check" {
			return h.Check(ctx)
		}
		c, err := kubeadmhook.ParseChange(a[1], a[2], a[3], a[4])
		if err != nil {
			return fmt.Errorf("kubeadm reconfigure %s: %w", component, err)
		}
		return h.Reconfigure(ctx, component, c)
	case verb == "controllers" && len(rest) == 2:
		if rest[1] == "check" {
			return h.Check(ctx)
		}
		return h.ControllerAction(ctx, rest[1])
	case verb == "fault" && len(rest) >= 2 && len(rest) <= 3:
		action, target := rest[1], ""
		if len(rest) == 3 {
			target = rest[2]
		}
		if action == "check" {
			if target == "" {
				return h.Check(ctx)
			}
			return h.CheckFault(ctx, target)
		}
		return h.Fault(ctx, action, target)
	case verb == "check" && len(rest) == 1:
		return h.Check(ctx)
	case verb == "restore" && len(rest) == 1:
		return h.Restore(ctx)
	}
	return fmt.Errorf("%s", kubeadmUsage)
}
