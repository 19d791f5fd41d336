package framework

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/workload-aware/apps-harness/framework/builder"
)

func kubeletNode(name, kubelet string, ready bool, taints ...corev1.Taint) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: kubelet},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}},
		},
	}
}

// TestOlderKubelets: only Ready nodes whose kubelet is a Kubernetes version
// of an older minor count; kwok's "kwok-v0.8.0" is no kubelet, a newer patch
// of the same minor is no skew.
func TestOlderKubelets(t *testing.T) {
	skew := corev1.Taint{Key: "was-harness.io/kubelet-skew", Value: "v1.36.3", Effect: corev1.TaintEffectNoSchedule}
	cs := fake.NewClientset(
		kubeletNode("cp", "v1.37.2", true),
		kubeletNode("kwok-0", "kwok-v0.8.0", true),
		kubeletNode("same-minor", "v1.37.0", true),
		kubeletNode("old-notready", "v1.35.1", false),
		kubeletNode("old", "v1.36.3", true, skew, corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}),
	)
	cs.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.37.2"}
	old, seen, err := OlderKubelets(context.Background(), cs)
	if err != nil {
		t.Fatal(err)
	}
	if len(old) != 1 || old[0].Node.Name != "old" || old[0].Kubelet.String() != "1.36.3" || old[0].Server.String() != "1.37.2" {
		t.Fatalf("OlderKubelets = %v, want only node old (1.36.3 under 1.37.2)", old)
	}
	if got := strings.Join(seen, " "); got != "cp=v1.37.2 kwok-0=kwok-v0.8.0 old-notready=v1.35.1 old=v1.36.3 same-minor=v1.37.0" {
		t.Errorf("seen = %q", got)
	}

	p := builder.Pod("p", "ns")
	old[0].Pin(p)
	pod := p.Obj()
	if pod.Spec.NodeSelector[corev1.LabelHostname] != "old" {
		t.Errorf("nodeSelector %v, want the old kubelet's hostname", pod.Spec.NodeSelector)
	}
	if len(pod.Spec.Tolerations) != 1 || pod.Spec.Tolerations[0].Key != skew.Key || pod.Spec.Tolerations[0].Value != skew.Value ||
		pod.Spec.Tolerations[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("tolerations %v, want exactly the NoSchedule taint %v", pod.Spec.Tolerations, skew)
	}
}

// TestFeatureEnabled reads component-base's gauge as a 1.36 kubelet serves it.
func TestFeatureEnabled(t *testing.T) {
	raw := []byte(`# HELP kubernetes_feature_enabled [BETA] This metric records the data about the stage and enablement of a k8s feature.
# TYPE kubernetes_feature_enabled gauge
kubernetes_feature_enabled{name="DRAWorkloadResourceClaims",stage="ALPHA"} 0
kubernetes_feature_enabled{name="DynamicResourceAllocation",stage=""} 1
kubernetes_feature_enabled{name="GenericWorkload",stage="ALPHA"} 1
`)
	for gate, want := range map[string][2]bool{
		"DRAWorkloadResourceClaims": {false, true}, "GenericWorkload": {true, true}, "DynamicResourceAllocation": {true, true}, "Unknown": {false, false},
	} {
		on, found, err := featureEnabled(raw, gate)
		if err != nil || on != want[0] || found != want[1] {
			t.Errorf("%s: enabled %t found %t err %v, want enabled %t found %t", gate, on, found, err, want[0], want[1])
		}
	}
}
