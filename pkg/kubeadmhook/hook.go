// Package kubeadmhook is the suite's vendor hooks (--reconfigure-command,
// --controller-restart-command and --fault-command, docs/vendor-guide.md) for a kubeadm
// cluster, kind being the first: kube-apiserver, kube-controller-manager and
// kube-scheduler are static pods, rewritten on each control-plane node
// through a node-exec command; the implementation runs as DaemonSets
// (deploy/), whose pod template is patched. Every change is undone by the
// call that asks for pristine settings, and Restore undoes whatever is left
// (an interrupted run): a cluster is never left reconfigured.
// The fault hook (fault.go) restarts and stops what it touches and leaves
// nothing changed. hack/hooks/kubeadm/ holds the scripts that call it.
package kubeadmhook

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// The components the reconfigure hook receives for the implementation
// (framework.HookComponent).
const (
	ImplementationAdmission   = "implementation-admission"
	ImplementationControllers = "implementation-controllers"
)

// Hook drives one kubeadm cluster.
type Hook struct {
	Client kubernetes.Interface
	Exec   NodeExec
	// Control stops and starts nodes (the fault hook's stop-node, start-node
	// and restart control-plane).
	Control NodeControl
	// Namespace, Admission and Controllers name the implementation's two
	// DaemonSets (deploy/: was-system, was-webhook, was-controller-manager).
	Namespace, AdmissionDaemonSet, ControllersDaemonSet string
	// WebhookConfiguration is the admission webhook configuration whose
	// caBundle the admission side publishes ("" skips that wait).
	WebhookConfiguration string
	// AdmissionProbeAnnotation is put on the dry-run Deployment that proves
	// the admission webhook is reached after a restart, for a webhook that
	// sees only Deployments carrying it ("" sends a plain Deployment).
	AdmissionProbeAnnotation string
	// Lease ("namespace/name") is the controllers' leader election Lease
	// ("" skips that wait).
	Lease string
	// Timeout bounds each wait (default 5 minutes).
	Timeout time.Duration
	Logf    func(format string, args ...any)
}

func (h *Hook) timeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return 5 * time.Minute
}

func (h *Hook) logf(format string, args ...any) {
	if h.Logf != nil {
		h.Logf(format, args...)
	}
}

// Reconfigure runs component with its pristine settings plus c, and returns
// once it is ready again.
func (h *Hook) Reconfigure(ctx context.Context, component string, c Change) error {
	switch {
	case slices.Contains(StaticPodComponents, component):
		if len(c.RuntimeConfig) > 0 && component != "kube-apiserver" {
			return fmt.Errorf("%s: runtime-config is a kube-apiserver flag", component)
		}
		return h.reconfigureStaticPod(ctx, component, c)
	case component == ImplementationAdmission || component == ImplementationControllers:
		if c.Version != "" || len(c.RuntimeConfig) > 0 {
			return fmt.Errorf("%s: only feature gates and flags can change (got %s)", component, c)
		}
		name := h.AdmissionDaemonSet
		if component == ImplementationControllers {
			name = h.ControllersDaemonSet
		}
		since := time.Now()
		ds, _, err := h.updateDaemonSet(ctx, name, func(s *dsState) { s.Reconfigure = c })
		if err != nil {
			return err
		}
		return h.waitServing(ctx, component, ds, since)
	}
	return fmt.Errorf("component %q: want one of %s, %s, %s", component,
		strings.Join(StaticPodComponents, ", "), ImplementationAdmission, ImplementationControllers)
}

// waitServing waits for what makes each side of the implementation serve
// again: the admission side's caBundle, the controllers' Lease (unless they
// run no controller).
func (h *Hook) waitServing(ctx context.Context, component string, ds *appsv1.DaemonSet, since time.Time) error {
	if component == ImplementationAdmission {
		if err := h.waitCABundle(ctx); err != nil {
			return err
		}
		return h.waitAdmissionAnswers(ctx)
	}
	if slices.Contains(ds.Spec.Template.Spec.Containers[0].Args, "--controllers=") {
		return nil // it runs no controller, so it takes no Lease
	}
	return h.waitLeader(ctx, ds, since)
}

// Controller actions of the controller-restart hook.
const (
	ActionStop  = "stop"
	ActionStart = "start"
	ActionKill  = "kill"
)

// ControllerAction stops, starts or kills the implementation's controllers.
//   - stop: the controller-manager runs no controller (--controllers=), so
//     nothing repairs a state the suite seeds; it keeps serving /healthz.
//     On the harness's clusters kube-controller-manager runs no Deployment,
//     ReplicaSet or StatefulSet controller, so this stops every controller
//     that would recover the state (the suite proves it with a probe).
//   - start: back to running them.
//   - kill: SIGKILL of the controller-manager process that holds the Lease,
//     wherever it is in its writes, and wait until the kubelet restarted it
//     (restartCount up, lastState exit 137) and the controllers lead again:
//     the Lease renewed after the kill by another identity than the killed
//     process's (the restarted process, whose identity is new, or another
//     instance that took the Lease over: a standby).
func (h *Hook) ControllerAction(ctx context.Context, action string) error {
	switch action {
	case ActionStop, ActionStart:
		since := time.Now()
		ds, _, err := h.updateDaemonSet(ctx, h.ControllersDaemonSet, func(s *dsState) { s.Stopped = action == ActionStop })
		if err != nil {
			return err
		}
		return h.waitServing(ctx, ImplementationControllers, ds, since)
	case ActionKill:
		return h.kill(ctx)
	}
	return fmt.Errorf("action %q: want stop, start or kill", action)
}

func (h *Hook) kill(ctx context.Context) error {
	ds, err := h.Client.AppsV1().DaemonSets(h.Namespace).Get(ctx, h.ControllersDaemonSet, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pod, holder, err := h.leaderPod(ctx, ds.Spec.Selector.MatchLabels)
	if err != nil {
		return err
	}
	if len(pod.Status.ContainerStatuses) == 0 || pod.Status.ContainerStatuses[0].ContainerID == "" {
		return fmt.Errorf("pod %s has no running container to kill", pod.Name)
	}
	cs := pod.Status.ContainerStatuses[0]
	_, id, _ := strings.Cut(cs.ContainerID, "://")
	// The process of that container, from the node's runtime: crictl is on
	// every kubeadm node.
	script := fmt.Sprintf("pid=$(crictl inspect --output go-template --template '{{.info.pid}}' %s) && kill -KILL \"$pid\" && echo \"$pid\"", id)
	out, err := h.Exec.Run(ctx, pod.Spec.NodeName, script, nil)
	if err != nil {
		return fmt.Errorf("killing pod %s's container %s: %w", pod.Name, id, err)
	}
	since := time.Now()
	h.logf("SIGKILL to pid %s: container %s of pod %s on %s (restartCount %d)", strings.TrimSpace(string(out)), id, pod.Name, pod.Spec.NodeName, cs.RestartCount)
	var last string
	err = wait.PollUntilContextTimeout(ctx, time.Second, h.timeout(), true, func(ctx context.Context) (bool, error) {
		p, err := h.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		if len(p.Status.ContainerStatuses) == 0 {
			return false, nil
		}
		s := p.Status.ContainerStatuses[0]
		t := s.LastTerminationState.Terminated
		last = fmt.Sprintf("restartCount %d, ready %t, last termination %+v", s.RestartCount, s.Ready, t)
		return s.RestartCount > cs.RestartCount && t != nil && t.ExitCode == 137 && s.Ready, nil
	})
	if err != nil {
		return fmt.Errorf("waiting %s for the kubelet to restart pod %s after SIGKILL: %w; last seen: %s", h.timeout(), pod.Name, err, last)
	}
	h.logf("pod %s restarted after SIGKILL: %s", pod.Name, last)
	return h.waitTakeover(ctx, holder, since)
}

// waitTakeover waits until the Lease is held by another identity than
// killed, renewed after since: the controllers run again, in the restarted
// process or in another instance (which need not be a pod of the DaemonSet:
// a spec may run a standby beside it).
func (h *Hook) waitTakeover(ctx context.Context, killed string, since time.Time) error {
	return h.waitLease(ctx, since, "another identity than the killed "+killed, func(_ context.Context, holder string) (bool, string, error) {
		return holder != killed, "is the killed process", nil
	})
}

// leaderPod is the pod of the controllers that holds the Lease, with the
// holder's identity (the only pod and "", when there is no Lease to read).
func (h *Hook) leaderPod(ctx context.Context, selector map[string]string) (*corev1.Pod, string, error) {
	pods, err := h.Client.CoreV1().Pods(h.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(selector).String()})
	if err != nil {
		return nil, "", err
	}
	holder := ""
	if ns, name, ok := strings.Cut(h.Lease, "/"); ok {
		if l, err := h.Client.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{}); err == nil && l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
	}
	for i, p := range pods.Items {
		if p.DeletionTimestamp == nil && (strings.HasPrefix(holder, p.Name+"_") || holder == "" && len(pods.Items) == 1) {
			return &pods.Items[i], holder, nil
		}
	}
	return nil, "", fmt.Errorf("no pod of daemonset %s/%s holds lease %s (holder %q)", h.Namespace, h.ControllersDaemonSet, h.Lease, holder)
}

// Check changes nothing: it sees that this hook can do its job here (the
// API answers, every control-plane node is reachable and has the static pod
// manifests, the implementation's DaemonSets exist) and that no earlier run
// left a change behind, which Restore undoes.
func (h *Hook) Check(ctx context.Context) error {
	var problems []string
	if err := h.readyz(ctx); err != nil {
		return fmt.Errorf("kube-apiserver /readyz: %w", err)
	}
	nodes, err := h.controlPlaneNodes(ctx)
	if err != nil {
		return err
	}
	for _, node := range nodes {
		script := "for c in " + strings.Join(StaticPodComponents, " ") + "; do test -f " + ManifestDir + "/$c.yaml || echo \"missing " + ManifestDir + "/$c.yaml\"; done; " +
			"ls " + PristineDir + " 2>/dev/null | sed 's/^/left reconfigured (pristine copy kept): /'; command -v crictl >/dev/null || echo 'no crictl'"
		out, err := h.Exec.Run(ctx, node, script, nil)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if line != "" {
				problems = append(problems, "node "+node+": "+line)
			}
		}
	}
	for _, name := range []string{h.AdmissionDaemonSet, h.ControllersDaemonSet} {
		ds, err := h.Client.AppsV1().DaemonSets(h.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			problems = append(problems, fmt.Sprintf("daemonset %s/%s: %v", h.Namespace, name, err))
			continue
		}
		if _, ok := ds.Annotations[annotationState]; ok {
			problems = append(problems, fmt.Sprintf("daemonset %s/%s left reconfigured: %s", h.Namespace, name, ds.Annotations[annotationState]))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n") + "\n(what an earlier run left reconfigured: was-harness kubeadm restore)")
	}
	return nil
}

// Restore puts every component this hook may have changed back to pristine.
func (h *Hook) Restore(ctx context.Context) error {
	var errs []error
	for _, c := range StaticPodComponents {
		errs = append(errs, h.reconfigureStaticPod(ctx, c, Change{}))
	}
	for _, name := range []string{h.AdmissionDaemonSet, h.ControllersDaemonSet} {
		since := time.Now()
		ds, err := h.Client.AppsV1().DaemonSets(h.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, ok := ds.Annotations[annotationState]; !ok {
			continue
		}
		ds, _, err = h.updateDaemonSet(ctx, name, func(s *dsState) { *s = dsState{} })
		if err == nil {
			component := ImplementationAdmission
			if name == h.ControllersDaemonSet {
				component = ImplementationControllers
			}
			err = h.waitServing(ctx, component, ds, since)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (h *Hook) controlPlaneNodes(ctx context.Context) ([]string, error) {
	nodes, err := h.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "node-role.kubernetes.io/control-plane"})
	if err != nil {
		return nil, fmt.Errorf("listing the control-plane nodes: %w", err)
	}
	if len(nodes.Items) == 0 {
		return nil, errors.New("no node labelled node-role.kubernetes.io/control-plane: not a kubeadm cluster?")
	}
	names := make([]string, 0, len(nodes.Items))
	for _, n := range nodes.Items {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	return names, nil
}
