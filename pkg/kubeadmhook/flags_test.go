package kubeadmhook

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestParseChange(t *testing.T) {
	c, err := ParseChange("B=false,A=true", "scheduling.k8s.io/v1beta1=false", "v1.36.3", "--controllers=*,bootstrapsigner --crash-after= ")
	if err != nil {
		t.Fatal(err)
	}
	want := Change{FeatureGates: map[string]bool{"A": true, "B": false}, RuntimeConfig: map[string]string{"scheduling.k8s.io/v1beta1": "false"},
		Version: "v1.36.3", Args: map[string]string{"controllers": "*,bootstrapsigner", "crash-after": ""}}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v, want %+v", c, want)
	}
	if c, err := ParseChange("", "", "", ""); err != nil || !c.IsZero() {
		t.Fatalf("all empty: want the zero Change (back to pristine), got %+v, %v", c, err)
	}
	for _, bad := range [][4]string{{"A=maybe", "", "", ""}, {"A", "", "", ""}, {"", "", "1.36", ""}, {"", "", "", "controllers=x"}, {"", "", "", "--x"}} {
		if _, err := ParseChange(bad[0], bad[1], bad[2], bad[3]); err == nil {
			t.Errorf("ParseChange(%q): want an error", bad)
		}
	}
}

func TestApplyToFlags(t *testing.T) {
	flags := []string{"kube-controller-manager", "--controllers=*,-deployment-controller", "--feature-gates=A=true,B=true", "--v=2"}
	got := ApplyToFlags(flags, Change{FeatureGates: map[string]bool{"B": false, "C": true}, Args: map[string]string{"controllers": "*", "leader-elect": "true"}})
	want := []string{"kube-controller-manager", "--controllers=*", "--feature-gates=A=true,B=false,C=true", "--v=2", "--leader-elect=true"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merge:\n got %q\nwant %q", got, want)
	}
	if flags[1] != "--controllers=*,-deployment-controller" {
		t.Fatal("ApplyToFlags changed its input")
	}
	// Another version: the cluster's gates are dropped, only the given ones stay.
	got = ApplyToFlags(flags, Change{Version: "v1.36.3"})
	if strings.Contains(strings.Join(got, " "), "feature-gates") {
		t.Fatalf("with a version the cluster's gates must go: %q", got)
	}
	got = ApplyToFlags([]string{"kube-apiserver"}, Change{RuntimeConfig: map[string]string{"b/v1": "false", "a/v1": "true"}})
	if want := []string{"kube-apiserver", "--runtime-config=a/v1=true,b/v1=false"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("runtime-config added: got %q, want %q", got, want)
	}
}

func TestWithTag(t *testing.T) {
	for in, want := range map[string]string{
		"registry.k8s.io/kube-scheduler:v1.37.2":           "registry.k8s.io/kube-scheduler:v1.36.3",
		"localhost:5000/kube-scheduler":                    "localhost:5000/kube-scheduler:v1.36.3",
		"registry.k8s.io/kube-scheduler:v1.37.2@sha256:ab": "registry.k8s.io/kube-scheduler:v1.36.3",
	} {
		if got := WithTag(in, "v1.36.3"); got != want {
			t.Errorf("WithTag(%q) = %q, want %q", in, got, want)
		}
	}
}

// A kubeadm manifest keeps everything but what the change names.
func TestRenderManifest(t *testing.T) {
	manifest := []byte(`apiVersion: v1
kind: Pod
metadata:
  labels: {component: kube-scheduler, tier: control-plane}
  name: kube-scheduler
  namespace: kube-system
spec:
  containers:
  - command:
    - kube-scheduler
    - --kubeconfig=/etc/kubernetes/scheduler.conf
    - --feature-gates=GenericWorkload=true
    image: registry.k8s.io/kube-scheduler:v1.37.2
    imagePullPolicy: IfNotPresent
    name: kube-scheduler
  hostNetwork: true
status: {}
`)
	out, err := renderManifest(manifest, Change{Version: "v1.36.3", FeatureGates: map[string]bool{"X": false}})
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := yaml.UnmarshalStrict(out, &pod); err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	if c.Image != "registry.k8s.io/kube-scheduler:v1.36.3" || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("image %s (%s), want the v1.36.3 tag, never pulled", c.Image, c.ImagePullPolicy)
	}
	if want := []string{"kube-scheduler", "--kubeconfig=/etc/kubernetes/scheduler.conf", "--feature-gates=X=false"}; !reflect.DeepEqual(c.Command, want) {
		t.Errorf("command %q, want %q", c.Command, want)
	}
	if !pod.Spec.HostNetwork || pod.Labels["component"] != "kube-scheduler" {
		t.Errorf("the rest of the manifest was lost: %s", out)
	}
}
