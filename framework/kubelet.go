package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"

	"github.com/workload-aware/apps-harness/framework/builder"
)

// Kubelet version skew: a node whose kubelet is of an older minor than the
// API server (make e2e-kind KIND_SKEW_WORKER=1 adds one, tainted so that no
// other spec lands on it). Specs find it by node.status.nodeInfo.kubeletVersion,
// which every kubelet reports, so they work on any cluster that has one.

// KubeletSkewGap is what the KEPs leave open about a kubelet older than the
// control plane: a KubeletSkew spec's skip on a cluster without one names it.
const KubeletSkewGap = `KEP-6277's Version Skew Strategy names two scenarios ("API server lacks the scheduling API", "Scheduler lacks GenericWorkload") and ` +
	`KEP-6276's the API server only; neither says what a kubelet older than the control plane does with a gang's pods or a PodGroup-level claim. ` +
	`The kubelet appears only in KEP-6277's "The DRAWorkloadResourceClaims feature gate (KEP-5729) must be enabled in kube-apiserver, ` +
	`kube-controller-manager, kube-scheduler, and kubelet for the resourceClaims field on StatefulSetSchedulingConfiguration to take effect. ` +
	`Without it, the field is ignored and ResourceClaims are not shared at the PodGroup level."`

// OldKubelet is a Ready node whose kubelet is older than the control plane.
type OldKubelet struct {
	Node corev1.Node
	// Kubelet and Server are the kubelet's and the API server's versions.
	Kubelet, Server *version.Version
}

func (o OldKubelet) String() string {
	return fmt.Sprintf("node %s (kubelet %s, API server %s)", o.Node.Name, o.Node.Status.NodeInfo.KubeletVersion, o.Server)
}

// Pin places a pod template on the old kubelet's node only: a nodeSelector
// on its hostname label, and a toleration of each of its NoSchedule and
// NoExecute taints (the skew worker of make e2e-kind is tainted so that no
// ordinary spec's pod lands there).
func (o OldKubelet) Pin(p *builder.PodWrapper) {
	host := o.Node.Labels[corev1.LabelHostname]
	if host == "" {
		host = o.Node.Name
	}
	p.NodeSelector(corev1.LabelHostname, host)
	for _, t := range o.Node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			p.Toleration(corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOpEqual, Value: t.Value, Effect: t.Effect})
		}
	}
}

// OlderKubelets returns the Ready nodes whose kubelet minor is older than
// the API server's, oldest first, and a description of every node's kubelet
// (for a skip message). A kubeletVersion that is not a Kubernetes version
// (kwok's "kwok-v0.8.0") is no older kubelet: no kubelet runs there.
func OlderKubelets(ctx context.Context, cs kubernetes.Interface) (old []OldKubelet, seen []string, err error) {
	info, err := cs.Discovery().ServerVersion()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the API server's version: %w", err)
	}
	server, err := version.ParseGeneric(info.GitVersion)
	if err != nil {
		return nil, nil, fmt.Errorf("the API server's version %q: %w", info.GitVersion, err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing nodes: %w", err)
	}
	for _, n := range nodes.Items {
		kv := n.Status.NodeInfo.KubeletVersion
		seen = append(seen, n.Name+"="+kv)
		v, err := version.ParseGeneric(kv)
		if err != nil || !nodeReady(&n) {
			continue
		}
		if v.Major() == server.Major() && v.Minor() < server.Minor() {
			old = append(old, OldKubelet{Node: n, Kubelet: v, Server: server})
		}
	}
	sort.Slice(old, func(i, j int) bool {
		if !old[i].Kubelet.EqualTo(old[j].Kubelet) {
			return old[i].Kubelet.LessThan(old[j].Kubelet)
		}
		return old[i].Node.Name < old[j].Node.Name
	})
	sort.Strings(seen)
	return old, seen, nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// RequireOldKubelet returns the oldest kubelet older than the control plane,
// or skips the spec, saying that the cluster has none and, in gap, what the
// KEPs leave open about such a kubelet (so that the skip names the gap).
func RequireOldKubelet(ctx context.Context, cs kubernetes.Interface, gap string) OldKubelet {
	ginkgo.GinkgoHelper()
	old, seen, err := OlderKubelets(ctx, cs)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	if len(old) == 0 {
		ginkgo.Skip(fmt.Sprintf("needs a Ready node whose kubelet is of an older minor than the API server "+
			"(make e2e-kind KIND_SKEW_WORKER=1 adds one); this cluster's kubelets: %s. %s", strings.Join(seen, ", "), gap))
	}
	return old[0]
}

// KubeletFeatureEnabled reads whether gate is on in the node's kubelet, from
// the kubelet's own kubernetes_feature_enabled metric (component-base
// exports every gate it knows, on or off), through the API server's node
// proxy. found is false when the kubelet does not know the gate.
func KubeletFeatureEnabled(ctx context.Context, cs kubernetes.Interface, node, gate string) (enabled, found bool, err error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "metrics").DoRaw(ctx)
	if err != nil {
		return false, false, fmt.Errorf("reading the metrics of node %s's kubelet through the API server's node proxy: %w", node, err)
	}
	enabled, found, err = featureEnabled(raw, gate)
	if err != nil {
		return false, false, fmt.Errorf("parsing the metrics of node %s's kubelet: %w", node, err)
	}
	return enabled, found, nil
}

// featureEnabled reads gate's kubernetes_feature_enabled sample.
func featureEnabled(raw []byte, gate string) (enabled, found bool, err error) {
	families, err := parseMetrics(raw)
	if err != nil {
		return false, false, err
	}
	for _, m := range families["kubernetes_feature_enabled"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" && l.GetValue() == gate {
				return m.GetGauge().GetValue() == 1, true, nil
			}
		}
	}
	return false, false, nil
}

// KubeletEvents returns the events the kubelet recorded about a pod, oldest
// first, as "Reason: message".
func KubeletEvents(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) ([]string, error) {
	list, err := cs.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Pod,involvedObject.name=" + pod.Name + ",involvedObject.uid=" + string(pod.UID)})
	if err != nil {
		return nil, err
	}
	events := list.Items
	sort.SliceStable(events, func(i, j int) bool { return eventTime(&events[i]).Before(eventTime(&events[j])) })
	var out []string
	for _, e := range events {
		if e.Source.Component == "kubelet" || e.ReportingController == "kubelet" {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out, nil
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.FirstTimestamp.Time
}

// TaintsOf renders a node's taints, for messages ("" when unreadable).
func TaintsOf(ctx context.Context, cs kubernetes.Interface, node string) string {
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	var out []string
	for _, t := range n.Spec.Taints {
		out = append(out, t.ToString())
	}
	return strings.Join(out, " ")
}
