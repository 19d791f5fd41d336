package kubeadmhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The fault hook (--fault-command, framework/faults.go) of a kubeadm
// cluster: the Fault specs' faults, made the way they happen on a real
// cluster.
//
//   - restart <component>: etcd, kube-apiserver, kube-controller-manager or
//     kube-scheduler, static pods: `crictl stop` of its container on each
//     control-plane node in turn (SIGTERM, then SIGKILL after the grace the
//     harness's local cluster gives it too); the kubelet starts a new
//     container with the same manifest, and the hook waits until the mirror
//     pod shows it, ready, and kube-apiserver answers /readyz.
//   - restart control-plane: each control-plane node (its machine or
//     container) stopped and started through NodeControl, one at a time:
//     etcd, kube-apiserver, kube-controller-manager, kube-scheduler, the
//     kubelet and the implementation's pods there go down together. Waits
//     until every static pod runs a new container, ready, the Node is
//     Ready, the implementation's pods on it run again and its controllers
//     hold their Lease.
//   - stop-node <node> / start-node <node>: NodeControl's stop and start;
//     start waits until the Node is Ready (its kubelet renewed its Lease
//     since, no unreachable or not-ready taint).
//   - compact-etcd: etcd compacted up to its current revision, with the
//     etcdctl of the etcd container where it has one, else through etcd's
//     JSON gateway from this machine (the node's etcd client certificate,
//     read through NodeExec, and its advertised client URL), else it says
//     it cannot.

// The fault hook's actions and the restart target of the whole control plane.
const (
	FaultRestart     = "restart"
	FaultStopNode    = "stop-node"
	FaultStartNode   = "start-node"
	FaultCompactEtcd = "compact-etcd"
	ControlPlane     = "control-plane"
)

// FaultComponents are the static pods `restart` restarts on its own.
var FaultComponents = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// stopGrace is how long a restarted component may shut down gracefully
// before it is killed: what the harness's local cluster gives it
// (localcluster.stopGrace). kube-apiserver stops listening at once but
// lingers until killed, which only lengthens the outage.
func stopGrace(component string) int {
	if component == "kube-apiserver" {
		return 2
	}
	return 15
}

// DefaultNodeControl stops and starts a kind node: its container has the
// node's name.
const DefaultNodeControl = "docker {action} {node}"

// NodeControl stops and starts a node: Template with {action} replaced by
// "stop" or "start" and {node} by the node's name, run by sh, so that one
// template serves kind ("docker {action} {node}", "podman {action} {node}"),
// virtual machines ("virsh {action} {node}" with a wrapper for virsh's
// words) or a kubelet reached by ssh ("ssh root@{node} systemctl {action}
// kubelet containerd", which stops the node's kubelet and runtime but not
// the machine).
type NodeControl struct{ Template string }

func (n NodeControl) template() string {
	if n.Template == "" {
		return DefaultNodeControl
	}
	return n.Template
}

// Command is the command line that does action on node.
func (n NodeControl) Command(action, node string) (string, error) {
	tmpl := n.template()
	if !strings.Contains(tmpl, "{node}") || !strings.Contains(tmpl, "{action}") {
		return "", fmt.Errorf("node-control template %q needs {action} and {node}", tmpl)
	}
	if action != "stop" && action != "start" {
		return "", fmt.Errorf("node-control action %q: want stop or start", action)
	}
	return strings.NewReplacer("{action}", action, "{node}", shellQuote(node)).Replace(tmpl), nil
}

// Run does action on node.
func (n NodeControl) Run(ctx context.Context, action, node string) error {
	cmdline, err := n.Command(action, node)
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "sh", "-c", cmdline).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s node %s (%s): %w: %s", action, node, cmdline, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// check sees that the template is whole and its program is on PATH.
func (n NodeControl) check() error {
	cmdline, err := n.Command("stop", "x")
	if err != nil {
		return err
	}
	prog := strings.Fields(cmdline)[0]
	if _, err := exec.LookPath(prog); err != nil && !strings.ContainsAny(prog, "$=\"'") {
		return fmt.Errorf("node-control template %q: %s is not on PATH", n.template(), prog)
	}
	return nil
}

// Fault does one action of the fault hook.
func (h *Hook) Fault(ctx context.Context, action, target string) error {
	switch action {
	case FaultRestart:
		switch {
		case target == ControlPlane:
			return h.restartControlPlane(ctx)
		case slices.Contains(FaultComponents, target):
			return h.restartComponent(ctx, target)
		}
		return fmt.Errorf("restart %q: want one of %s or %s", target, strings.Join(FaultComponents, ", "), ControlPlane)
	case FaultStopNode:
		if _, err := h.Client.CoreV1().Nodes().Get(ctx, target, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("stop-node %q: %w", target, err)
		}
		if err := h.Control.Run(ctx, "stop", target); err != nil {
			return err
		}
		h.logf("node %s stopped", target)
		return nil
	case FaultStartNode:
		since := time.Now()
		if err := h.Control.Run(ctx, "start", target); err != nil {
			return err
		}
		return h.waitNodeReady(ctx, target, since)
	case FaultCompactEtcd:
		return h.compactEtcd(ctx)
	}
	return fmt.Errorf("fault action %q: want %s, %s, %s or %s", action, FaultRestart, FaultStopNode, FaultStartNode, FaultCompactEtcd)
}

// CheckFault changes nothing: it sees that action can be done here.
func (h *Hook) CheckFault(ctx context.Context, action string) error {
	nodes, err := h.controlPlaneNodes(ctx)
	if err != nil {
		return err
	}
	switch action {
	case FaultRestart:
		var problems []string
		for _, node := range nodes {
			script := "for c in " + strings.Join(FaultComponents, " ") + "; do test -f " + ManifestDir + "/$c.yaml || echo \"no " + ManifestDir + "/$c.yaml (not a static pod here)\"; done; " +
				"command -v crictl >/dev/null || echo 'no crictl'"
			out, err := h.Exec.Run(ctx, node, script, nil)
			if err != nil {
				return err
			}
			if s := strings.TrimSpace(string(out)); s != "" {
				problems = append(problems, "node "+node+": "+strings.ReplaceAll(s, "\n", "; "))
			}
		}
		if err := h.Control.check(); err != nil {
			problems = append(problems, "restart control-plane: "+err.Error())
		}
		if len(problems) > 0 {
			return errors.New(strings.Join(problems, "\n"))
		}
		return nil
	case FaultStopNode, FaultStartNode:
		return h.Control.check()
	case FaultCompactEtcd:
		e, err := h.etcdOn(ctx, nodes[0])
		if err != nil {
			return err
		}
		_, how, err := e.revision(ctx)
		if err != nil {
			return err
		}
		h.logf("compact-etcd can work here: %s", how)
		return nil
	}
	return fmt.Errorf("fault action %q: want %s, %s, %s or %s", action, FaultRestart, FaultStopNode, FaultStartNode, FaultCompactEtcd)
}

// stopStaticPodScript stops a static pod's running container on its node:
// SIGTERM, then SIGKILL after stopGrace. crictl bounds each call to the
// runtime by its own --timeout (2 s by default), which a stop that waits out
// its grace exceeds: kind's full run saw "DeadlineExceeded" from a
// kube-apiserver that lingered after SIGTERM. So the call gets the grace
// plus time for the runtime to answer.
func stopStaticPodScript(component string) string {
	grace := stopGrace(component)
	return fmt.Sprintf("ids=$(crictl ps -q --state running --label io.kubernetes.pod.namespace=kube-system --name '^%s$'); "+
		"[ -n \"$ids\" ] || { echo 'no running %s container' >&2; exit 1; }; crictl --timeout %ds stop --timeout %d $ids",
		component, component, grace+crictlAnswer, grace)
}

// crictlAnswer is how long crictl waits for the runtime beyond a stop's grace.
const crictlAnswer = 30

// restartComponent restarts a static pod's container on each control-plane
// node in turn.
func (h *Hook) restartComponent(ctx context.Context, component string) error {
	nodes, err := h.controlPlaneNodes(ctx)
	if err != nil {
		return err
	}
	for _, node := range nodes {
		manifest, err := h.Exec.Run(ctx, node, "cat "+manifestPath(component), nil)
		if err != nil {
			return fmt.Errorf("reading %s's manifest: %w", component, err)
		}
		want, err := decodePod(manifest)
		if err != nil {
			return err
		}
		mirror := component + "-" + node
		before := h.containerID(ctx, mirror)
		if before == "" {
			return fmt.Errorf("mirror pod kube-system/%s shows no container: does %s run?", mirror, component)
		}
		out, err := h.Exec.Run(ctx, node, stopStaticPodScript(component), nil)
		if err != nil {
			return fmt.Errorf("stopping %s on %s: %w", component, node, err)
		}
		h.logf("%s on %s stopped (crictl stop %s); the kubelet starts it again", component, node, strings.TrimSpace(string(out)))
		if err := h.waitStaticPod(ctx, mirror, want, before, true); err != nil {
			return err
		}
	}
	return nil
}

// restartControlPlane stops and starts each control-plane node in turn.
func (h *Hook) restartControlPlane(ctx context.Context) error {
	nodes, err := h.controlPlaneNodes(ctx)
	if err != nil {
		return err
	}
	for _, node := range nodes {
		befores := map[string]string{}
		for _, c := range FaultComponents {
			befores[c] = h.containerID(ctx, c+"-"+node)
		}
		implBefore, err := h.implementationContainers(ctx, node)
		if err != nil {
			return err
		}
		since := time.Now()
		if err := h.Control.Run(ctx, "stop", node); err != nil {
			return err
		}
		h.logf("control-plane node %s stopped", node)
		if err := h.Control.Run(ctx, "start", node); err != nil {
			return err
		}
		h.logf("control-plane node %s started", node)
		// The manifests as the node has them now (kind's entrypoint rewrites
		// the node's address in them when its container got another one).
		for _, c := range FaultComponents {
			manifest, err := h.Exec.Run(ctx, node, "cat "+manifestPath(c), nil)
			if err != nil {
				return fmt.Errorf("reading %s's manifest: %w", c, err)
			}
			want, err := decodePod(manifest)
			if err != nil {
				return err
			}
			if err := h.waitStaticPod(ctx, c+"-"+node, want, befores[c], true); err != nil {
				return err
			}
		}
		if err := h.waitNodeReady(ctx, node, since); err != nil {
			return err
		}
		if err := h.waitImplementationRestarted(ctx, node, implBefore, since); err != nil {
			return err
		}
	}
	return nil
}

// implementationContainers maps each pod of the implementation's DaemonSets
// on node to its first container's ID.
func (h *Hook) implementationContainers(ctx context.Context, node string) (map[string]string, error) {
	out := map[string]string{}
	for _, name := range []string{h.AdmissionDaemonSet, h.ControllersDaemonSet} {
		ds, err := h.Client.AppsV1().DaemonSets(h.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("daemonset %s/%s: %w", h.Namespace, name, err)
		}
		pods, err := h.Client.CoreV1().Pods(h.Namespace).List(ctx, metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(ds.Spec.Selector.MatchLabels).String(), FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			return nil, err
		}
		for _, p := range pods.Items {
			id := ""
			if len(p.Status.ContainerStatuses) > 0 {
				id = p.Status.ContainerStatuses[0].ContainerID
			}
			out[p.Name] = id
		}
	}
	return out, nil
}

// waitImplementationRestarted waits until each implementation pod that ran
// on node runs a new container, ready, and the controllers hold their Lease
// again (renewed since), and the admission webhook answers.
func (h *Hook) waitImplementationRestarted(ctx context.Context, node string, before map[string]string, since time.Time) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, h.timeout(), true, func(ctx context.Context) (bool, error) {
		for name, id := range before {
			p, err := h.Client.CoreV1().Pods(h.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			if len(p.Status.ContainerStatuses) == 0 {
				last = "pod " + name + " has no container status"
				return false, nil
			}
			s := p.Status.ContainerStatuses[0]
			if s.ContainerID == id || !s.Ready {
				last = fmt.Sprintf("pod %s: container %s (before %s), ready %t", name, s.ContainerID, id, s.Ready)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting %s for the implementation's pods on %s to run again: %w; last seen: %s", h.timeout(), node, err, last)
	}
	ds, err := h.Client.AppsV1().DaemonSets(h.Namespace).Get(ctx, h.ControllersDaemonSet, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if err := h.waitLeader(ctx, ds, since); err != nil {
		return err
	}
	// A ready webhook pod is not a reachable webhook: after a control-plane
	// node restart the Service's endpoints and routes follow later (measured
	// on kind: "connection refused" for the next specs' creates).
	return h.waitAdmissionAnswers(ctx)
}

// waitNodeReady waits until node's kubelet has renewed its Lease since, the
// Node is Ready and carries no unreachable or not-ready taint.
func (h *Hook) waitNodeReady(ctx context.Context, node string, since time.Time) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, h.timeout(), true, func(ctx context.Context) (bool, error) {
		l, err := h.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			last = "its Lease: " + err.Error()
			return false, nil
		}
		if l.Spec.RenewTime == nil || l.Spec.RenewTime.Time.Before(since.Truncate(time.Second)) {
			last = fmt.Sprintf("its kubelet has not renewed its Lease since %s (renewed %v)", since.Format(time.TimeOnly), l.Spec.RenewTime)
			return false, nil
		}
		n, err := h.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		if !NodeReady(n) {
			last = fmt.Sprintf("conditions %v, taints %v", n.Status.Conditions, n.Spec.Taints)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting %s for node %s to be Ready: %w; last seen: %s", h.timeout(), node, err, last)
	}
	h.logf("node %s is Ready", node)
	return nil
}

// NodeReady: the Ready condition is True and the node lifecycle controller
// has lifted its unreachable and not-ready taints.
func NodeReady(n *corev1.Node) bool {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeNotReady {
			return false
		}
	}
	return ready
}

// etcd is how to reach the etcd of one control-plane node: the flags of its
// static pod's etcd, and its running container.
type etcd struct {
	h    *Hook
	node string
	// Container is the etcd container's ID on the node ("" when none runs).
	Container string
	// CAFile, CertFile, KeyFile are its client-facing TLS files (paths on
	// the node, mounted into its container); Endpoint its advertised client URL.
	CAFile, CertFile, KeyFile, Endpoint string
}

// etcdOn reads node's etcd manifest and finds its container.
func (h *Hook) etcdOn(ctx context.Context, node string) (*etcd, error) {
	manifest, err := h.Exec.Run(ctx, node, "cat "+manifestPath("etcd"), nil)
	if err != nil {
		return nil, fmt.Errorf("no etcd static pod on %s (an external etcd is not this hook's to compact): %w", node, err)
	}
	pod, err := decodePod(manifest)
	if err != nil {
		return nil, err
	}
	e := parseEtcdFlags(pod.Spec.Containers[0].Command)
	e.h, e.node = h, node
	out, err := h.Exec.Run(ctx, node, "crictl ps -q --state running --label io.kubernetes.pod.namespace=kube-system --name '^etcd$' | head -n 1", nil)
	if err != nil {
		return nil, err
	}
	e.Container = strings.TrimSpace(string(out))
	return e, nil
}

// parseEtcdFlags reads the client TLS files and URL from etcd's command.
func parseEtcdFlags(command []string) *etcd {
	e := &etcd{}
	for _, f := range command {
		name, value, ok := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if !ok || !strings.HasPrefix(f, "--") {
			continue
		}
		switch name {
		case "trusted-ca-file":
			e.CAFile = value
		case "cert-file":
			e.CertFile = value
		case "key-file":
			e.KeyFile = value
		case "advertise-client-urls":
			e.Endpoint, _, _ = strings.Cut(value, ",")
		}
	}
	return e
}

// etcdctl runs etcdctl in the etcd container with the client flags.
func (e *etcd) etcdctl(ctx context.Context, args ...string) ([]byte, error) {
	if e.Container == "" {
		return nil, fmt.Errorf("no running etcd container on %s", e.node)
	}
	cmd := []string{"crictl", "exec", e.Container, "etcdctl", "--endpoints=https://127.0.0.1:2379",
		"--cacert=" + e.CAFile, "--cert=" + e.CertFile, "--key=" + e.KeyFile}
	for i := range cmd {
		cmd[i] = shellQuote(cmd[i])
	}
	for _, a := range args {
		cmd = append(cmd, shellQuote(a))
	}
	return e.h.Exec.Run(ctx, e.node, strings.Join(cmd, " "), nil)
}

// gateway calls etcd's JSON gateway (POST path with body) from this machine.
func (e *etcd) gateway(ctx context.Context, path string, body any, out any) error {
	if e.Endpoint == "" || e.CAFile == "" || e.CertFile == "" || e.KeyFile == "" {
		return fmt.Errorf("etcd's manifest on %s names no client URL or TLS files", e.node)
	}
	files := map[string][]byte{}
	for _, f := range []string{e.CAFile, e.CertFile, e.KeyFile} {
		b, err := e.h.Exec.Run(ctx, e.node, "cat "+shellQuote(f), nil)
		if err != nil {
			return fmt.Errorf("reading %s on %s: %w", f, e.node, err)
		}
		files[f] = b
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(files[e.CAFile]) {
		return fmt.Errorf("%s on %s holds no certificate", e.CAFile, e.node)
	}
	cert, err := tls.X509KeyPair(files[e.CertFile], files[e.KeyFile])
	if err != nil {
		return fmt.Errorf("etcd's client certificate on %s: %w", e.node, err)
	}
	client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(e.Endpoint, "/")+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("etcd's JSON gateway at %s from this machine: %w", e.Endpoint, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s%s: %s: %s", e.Endpoint, path, resp.Status, strings.TrimSpace(string(data)))
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// revision is etcd's current revision, and how it was read: the
// container's etcdctl, else the gateway; an error names both failures.
func (e *etcd) revision(ctx context.Context) (int64, string, error) {
	out, ctlErr := e.etcdctl(ctx, "endpoint", "status", "-w", "json")
	if ctlErr == nil {
		rev, err := parseEndpointStatus(out)
		return rev, "etcdctl in the etcd container on " + e.node, err
	}
	var rng struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	// Any key will do: the response header carries the store's revision.
	gwErr := e.gateway(ctx, "/v3/kv/range", map[string]any{"key": "Lw==", "limit": 1, "keys_only": true}, &rng)
	if gwErr == nil {
		rev, err := strconv.ParseInt(rng.Header.Revision, 10, 64)
		return rev, "etcd's JSON gateway at " + e.Endpoint + " from this machine", err
	}
	return 0, "", fmt.Errorf("cannot reach etcd on %s: the etcd container has no usable etcdctl (%v), and its JSON gateway is not reachable from this machine (%v)", e.node, ctlErr, gwErr)
}

// parseEndpointStatus reads the revision from `etcdctl endpoint status -w json`.
func parseEndpointStatus(out []byte) (int64, error) {
	var st []struct {
		Status struct {
			Header struct {
				Revision int64 `json:"revision"`
			} `json:"header"`
		} `json:"Status"`
	}
	if err := json.Unmarshal(out, &st); err != nil || len(st) == 0 || st[0].Status.Header.Revision == 0 {
		return 0, fmt.Errorf("etcdctl endpoint status: no revision in %q (%v)", bytes.TrimSpace(out), err)
	}
	return st[0].Status.Header.Revision, nil
}

// compactEtcd compacts etcd (one member does it for the cluster) up to its
// current revision, physically.
func (h *Hook) compactEtcd(ctx context.Context) error {
	nodes, err := h.controlPlaneNodes(ctx)
	if err != nil {
		return err
	}
	e, err := h.etcdOn(ctx, nodes[0])
	if err != nil {
		return err
	}
	rev, how, err := e.revision(ctx)
	if err != nil {
		return err
	}
	if strings.HasPrefix(how, "etcdctl") {
		_, err = e.etcdctl(ctx, "compaction", "--physical", strconv.FormatInt(rev, 10))
	} else {
		err = e.gateway(ctx, "/v3/kv/compaction", map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}, nil)
	}
	if err != nil {
		return fmt.Errorf("compacting etcd up to revision %d (%s): %w", rev, how, err)
	}
	h.logf("compacted etcd up to revision %d (%s)", rev, how)
	return nil
}
