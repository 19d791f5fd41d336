package deploy

import (
	"net/netip"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// egressAllowed evaluates the namespace's egress NetworkPolicies for a pod
// with podLabels, as a NetworkPolicy implementation does: no policy of type
// Egress selecting the pod allows everything; otherwise some rule of one of
// them must match the destination (after the Service's DNAT). Only the
// fields deploy/ uses are understood; anything else fails the test.
func egressAllowed(t *testing.T, policies []networkingv1.NetworkPolicy, podLabels map[string]string, dst netip.Addr, proto corev1.Protocol, port int32) bool {
	t.Helper()
	selected := false
	for _, p := range policies {
		if !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
		if err != nil {
			t.Fatal(err)
		}
		if !sel.Matches(labels.Set(podLabels)) {
			continue
		}
		selected = true
		for _, r := range p.Spec.Egress {
			if ruleMatches(t, r, dst, proto, port) {
				return true
			}
		}
	}
	return !selected
}

func ruleMatches(t *testing.T, r networkingv1.NetworkPolicyEgressRule, dst netip.Addr, proto corev1.Protocol, port int32) bool {
	t.Helper()
	portOK := len(r.Ports) == 0
	for _, p := range r.Ports {
		if p.EndPort != nil || p.Port == nil || p.Port.StrVal != "" {
			t.Fatalf("egress port %+v: the evaluator knows numeric ports only", p)
		}
		if (p.Protocol == nil || *p.Protocol == proto) && p.Port.IntVal == port {
			portOK = true
		}
	}
	if !portOK {
		return false
	}
	if len(r.To) == 0 {
		return true
	}
	for _, peer := range r.To {
		if peer.PodSelector != nil || peer.NamespaceSelector != nil || peer.IPBlock == nil {
			t.Fatalf("egress peer %+v: the evaluator knows ipBlocks only", peer)
		}
		in := func(cidr string) bool {
			prefix, err := netip.ParsePrefix(cidr)
			if err != nil {
				t.Fatalf("ipBlock %q: %v", cidr, err)
			}
			return prefix.Contains(dst)
		}
		if !in(peer.IPBlock.CIDR) {
			continue
		}
		if !slices.ContainsFunc(peer.IPBlock.Except, in) {
			return true
		}
	}
	return false
}

// TestEgressOnlyToTheAPIServer: every pod of the namespace (the
// DaemonSets', and a bare standby pod with other labels) reaches the API
// server's endpoint on kind (the control-plane node, 6443) and a managed
// cluster's (443), and nothing else: no DNS, no metadata service, no other
// port. An address outside the cluster on 443 passes: the trade-off of a
// portable policy (docs/install.md says how to narrow it).
func TestEgressOnlyToTheAPIServer(t *testing.T) {
	objs := rendered(t)
	var policies []networkingv1.NetworkPolicy
	for _, o := range objs {
		if o.GetKind() == "NetworkPolicy" {
			policies = append(policies, *into[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy", o.GetNamespace(), o.GetName()))
		}
	}
	pods := map[string]map[string]string{"a standby pod with other labels": {"app.kubernetes.io/name": "standby"}}
	for _, name := range []string{"was-controller-manager", "was-webhook"} {
		pods[name] = into[appsv1.DaemonSet](t, objs, "DaemonSet", Namespace, name).Spec.Template.Labels
	}
	for _, tc := range []struct {
		what  string
		dst   string
		proto corev1.Protocol
		port  int32
		want  bool
	}{
		{"kind's apiserver endpoint (the control-plane node)", "172.18.0.2", corev1.ProtocolTCP, 6443, true},
		{"a managed cluster's apiserver endpoint", "10.0.0.2", corev1.ProtocolTCP, 443, true},
		{"an IPv6 apiserver endpoint", "fc00:f853:ccd:e793::2", corev1.ProtocolTCP, 6443, true},
		{"the cloud metadata service", "169.254.169.254", corev1.ProtocolTCP, 80, false},
		{"the cloud metadata service on 443", "169.254.169.254", corev1.ProtocolTCP, 443, false},
		{"a link-local address on 6443", "169.254.10.1", corev1.ProtocolTCP, 6443, false},
		{"IPv6 link-local", "fe80::1", corev1.ProtocolTCP, 443, false},
		{"cluster DNS", "10.96.0.10", corev1.ProtocolUDP, 53, false},
		{"cluster DNS over TCP", "10.96.0.10", corev1.ProtocolTCP, 53, false},
		{"a kubelet", "172.18.0.3", corev1.ProtocolTCP, 10250, false},
		{"etcd", "172.18.0.2", corev1.ProtocolTCP, 2379, false},
		{"UDP on the apiserver port", "172.18.0.2", corev1.ProtocolUDP, 6443, false},
		{"any address on 443 (the trade-off of a portable policy)", "203.0.113.7", corev1.ProtocolTCP, 443, true},
	} {
		for pod, podLabels := range pods {
			if got := egressAllowed(t, policies, podLabels, netip.MustParseAddr(tc.dst), tc.proto, tc.port); got != tc.want {
				t.Errorf("%s: egress to %s, %s %s:%d: allowed %t, want %t", pod, tc.what, tc.proto, tc.dst, tc.port, got, tc.want)
			}
		}
	}
}
