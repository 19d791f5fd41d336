package deploy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/workload-aware/apps-harness/api/cluster"
	"github.com/workload-aware/apps-harness/controllers/admission"
)

const image = "localhost/was-controller-manager:dev"

// rendered renders deploy/ from disk and from the compiled-in copy, which
// must agree (the e2e spec uses the compiled-in one).
func rendered(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	disk, err := RenderDir(".")
	if err != nil {
		t.Fatal(err)
	}
	embedded, err := Render()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(disk, embedded); diff != "" {
		t.Fatalf("the compiled-in kustomization differs from deploy/ on disk (-disk +embedded):\n%s", diff)
	}
	return disk
}

func into[T any](t *testing.T, objs []*unstructured.Unstructured, kind, namespace, name string) *T {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name {
			out := new(T)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, out, true); err != nil {
				t.Fatalf("%s %s/%s: %v", kind, namespace, name, err)
			}
			return out
		}
	}
	t.Fatalf("no %s %s/%s in the rendered manifests", kind, namespace, name)
	return nil
}

// flags parses --name=value arguments.
func flags(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		out[k] = v
	}
	return out
}

func TestNoDeploymentOrStatefulSetRunsTheReferenceImplementation(t *testing.T) {
	var daemonSets []string
	for _, o := range rendered(t) {
		switch o.GetKind() {
		case "Deployment", "StatefulSet", "ReplicaSet", "Pod", "Job":
			// The Deployment, ReplicaSet and StatefulSet controllers are what
			// this installs; kube-controller-manager runs without them.
			t.Errorf("%s %s/%s: the reference implementation must run from a DaemonSet", o.GetKind(), o.GetNamespace(), o.GetName())
		case "DaemonSet":
			daemonSets = append(daemonSets, o.GetName())
		}
	}
	if want := []string{"was-controller-manager", "was-webhook"}; !slices.Equal(daemonSets, want) {
		t.Errorf("DaemonSets %v, want %v", daemonSets, want)
	}
}

// webhookConfigurationName is controllers/config/webhook.yaml's.
const webhookConfigurationName = "was-harness-apps-admission"

// featureGates is the --feature-gates value both sides run with: every gate
// of api/cluster, on (the local cluster's too).
func featureGates() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(cluster.AllFeatureGates())) {
		parts = append(parts, name+"=true")
	}
	return strings.Join(parts, ",")
}

func TestControllerAndWebhookFlags(t *testing.T) {
	objs := rendered(t)
	for _, name := range []string{"was-controller-manager", "was-webhook"} {
		ds := into[appsv1.DaemonSet](t, objs, "DaemonSet", Namespace, name)
		spec := ds.Spec.Template.Spec
		if len(spec.Containers) != 1 {
			t.Fatalf("%s: %d containers, want 1", name, len(spec.Containers))
		}
		c := spec.Containers[0]
		if c.Image != image || c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("%s: image %q pull %q, want %q IfNotPresent (loaded into kind, not pulled)", name, c.Image, c.ImagePullPolicy, image)
		}
		f := flags(c.Args)
		if f["feature-gates"] != featureGates() {
			t.Errorf("%s: --feature-gates=%s, want the local cluster's %s", name, f["feature-gates"], featureGates())
		}
		// Each side under its own identity: the network-facing webhook must
		// not hold the controllers' token grants.
		if spec.ServiceAccountName != name {
			t.Errorf("%s: serviceAccountName %q, want %q", name, spec.ServiceAccountName, name)
		}
		if spec.NodeSelector["node-role.kubernetes.io/control-plane"] != "" || !slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool {
			return tol.Key == "node-role.kubernetes.io/control-plane" && tol.Operator == corev1.TolerationOpExists
		}) {
			t.Errorf("%s: must run on (and tolerate) the control-plane node: selector %v tolerations %v", name, spec.NodeSelector, spec.Tolerations)
		}
		if _, ok := spec.NodeSelector["node-role.kubernetes.io/control-plane"]; !ok {
			t.Errorf("%s: no control-plane nodeSelector", name)
		}
		checkLoopbackHealth(t, name, c, f)
		if c.Resources.Limits.Memory().IsZero() || !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == "GOMEMLIMIT" && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory"
		}) {
			t.Errorf("%s: needs a memory limit, and GOMEMLIMIT from it", name)
		}
		switch name {
		case "was-controller-manager":
			if got := strings.Split(f["controllers"], ","); !slices.Equal(got, []string{"deployment", "replicaset", "statefulset"}) {
				t.Errorf("%s: --controllers=%s, want all three", name, f["controllers"])
			}
			if f["leader-elect"] != "true" {
				t.Errorf("%s: --leader-elect=%q: one pod per control-plane node, so only the Lease holder may run the controllers", name, f["leader-elect"])
			}
			if _, ok := f["webhook-bind-address"]; ok {
				t.Errorf("%s: the controller side serves no webhook", name)
			}
			if len(c.Ports) != 0 {
				t.Errorf("%s: exposes ports %v; it takes no connections", name, c.Ports)
			}
		case "was-webhook":
			if v, ok := f["controllers"]; !ok || v != "" {
				t.Errorf("%s: --controllers must be given empty (admission only), got %q present=%t", name, v, ok)
			}
			for _, k := range []string{"webhook-bind-address", "self-signed-cert-secret", "self-signed-cert-hosts", "self-signed-ca-bundle-webhook-configuration", "self-signed-cert-validity"} {
				if f[k] == "" {
					t.Errorf("%s: --%s missing", name, k)
				}
			}
			svc := into[corev1.Service](t, objs, "Service", Namespace, "was-webhook")
			if host := fmt.Sprintf("%s.%s.svc", svc.Name, svc.Namespace); !slices.Contains(strings.Split(f["self-signed-cert-hosts"], ","), host) {
				t.Errorf("%s: --self-signed-cert-hosts=%s lacks the Service name %s", name, f["self-signed-cert-hosts"], host)
			}
			if f["self-signed-ca-bundle-webhook-configuration"] != webhookConfigurationName {
				t.Errorf("%s: caBundle goes to %q, want %q", name, f["self-signed-ca-bundle-webhook-configuration"], webhookConfigurationName)
			}
			if !strings.HasPrefix(f["self-signed-cert-secret"], Namespace+"/") {
				t.Errorf("%s: --self-signed-cert-secret=%s: want a Secret in %s (its Role is there)", name, f["self-signed-cert-secret"], Namespace)
			}
			// The Service reaches the webhook port; the selector picks this pod.
			port := svc.Spec.Ports[0].TargetPort.StrVal
			if len(c.Ports) != 1 || c.Ports[0].Name != port || !strings.HasSuffix(f["webhook-bind-address"], fmt.Sprintf(":%d", c.Ports[0].ContainerPort)) {
				t.Errorf("ports %v: want only the webhook's, named as the Service's targetPort %q, where --webhook-bind-address=%s listens", c.Ports, port, f["webhook-bind-address"])
			}
			for k, v := range svc.Spec.Selector {
				if ds.Spec.Template.Labels[k] != v {
					t.Errorf("Service selector %v does not select the webhook pods %v", svc.Spec.Selector, ds.Spec.Template.Labels)
				}
			}
		}
	}
}

// checkLoopbackHealth: /healthz and /metrics listen on loopback only, and
// the readiness probe runs inside the pod (`was-controller-manager probe`)
// against that address, since a kubelet HTTP probe would need the port open
// on the pod's IP.
func checkLoopbackHealth(t *testing.T, name string, c corev1.Container, f map[string]string) {
	t.Helper()
	host, port, ok := strings.Cut(f["bind-address"], ":")
	if !ok || host != "127.0.0.1" {
		t.Errorf("%s: --bind-address=%s, want 127.0.0.1:<port>", name, f["bind-address"])
	}
	p := c.ReadinessProbe
	if p == nil || p.Exec == nil {
		t.Errorf("%s: needs an exec readiness probe (hack/e2e-kind.sh waits for it)", name)
		return
	}
	want := []string{"/was-controller-manager", "probe", fmt.Sprintf("http://127.0.0.1:%s/healthz", port)}
	if !slices.Equal(p.Exec.Command, want) {
		t.Errorf("%s: readiness probe %v, want %v", name, p.Exec.Command, want)
	}
}

// TestWebhookConfigurationCannotTakeTheClusterDown: deploy/ registers the
// local cluster's webhook (controllers/config/webhook.yaml) behind its
// Service, and never for kube-system or the install's own namespace.
func TestWebhookConfigurationCannotTakeTheClusterDown(t *testing.T) {
	objs := rendered(t)
	got := into[admissionregistrationv1.ValidatingWebhookConfiguration](t, objs, "ValidatingWebhookConfiguration", "", webhookConfigurationName)
	if len(got.Webhooks) != 1 {
		t.Fatalf("%d webhooks, want 1", len(got.Webhooks))
	}
	wh := got.Webhooks[0]
	svc := wh.ClientConfig.Service
	if svc == nil || svc.Namespace != Namespace || svc.Name != "was-webhook" || svc.Path == nil || *svc.Path != admission.Path {
		t.Errorf("clientConfig.service %+v, want %s/was-webhook path %s", svc, Namespace, admission.Path)
	}
	sel, err := metav1.LabelSelectorAsSelector(wh.NamespaceSelector)
	if err != nil || wh.NamespaceSelector == nil {
		t.Fatalf("namespaceSelector %v: %v", wh.NamespaceSelector, err)
	}
	for ns, matched := range map[string]bool{"kube-system": false, Namespace: false, "default": true, "team-a": true} {
		if got := sel.Matches(labelsOf(ns)); got != matched {
			t.Errorf("namespaceSelector matches namespace %s: %t, want %t", ns, got, matched)
		}
	}
	if len(wh.MatchConditions) == 0 {
		t.Error("no matchConditions: every Deployment write would depend on the webhook")
	}
}

// labelsOf is the label every namespace carries (set by the API server).
func labelsOf(namespace string) labels.Set {
	return labels.Set{"kubernetes.io/metadata.name": namespace}
}

// TestNetworkPolicyAdmitsOnlyTheWebhookPort: every pod of the namespace
// refuses connections but the webhook's port on the webhook pods.
func TestNetworkPolicyAdmitsOnlyTheWebhookPort(t *testing.T) {
	objs := rendered(t)
	deny := into[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy", Namespace, "was-deny-ingress")
	if len(deny.Spec.PodSelector.MatchLabels)+len(deny.Spec.PodSelector.MatchExpressions) != 0 || len(deny.Spec.Ingress) != 0 ||
		!slices.Equal(deny.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("was-deny-ingress %+v: want every pod, Ingress, no rule", deny.Spec)
	}
	allow := into[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy", Namespace, "was-webhook-ingress")
	ds := into[appsv1.DaemonSet](t, objs, "DaemonSet", Namespace, "was-webhook")
	sel, err := metav1.LabelSelectorAsSelector(&allow.Spec.PodSelector)
	if err != nil || !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		t.Errorf("was-webhook-ingress selects %v, not the webhook pods %v (%v)", allow.Spec.PodSelector, ds.Spec.Template.Labels, err)
	}
	cm := into[appsv1.DaemonSet](t, objs, "DaemonSet", Namespace, "was-controller-manager")
	if sel.Matches(labels.Set(cm.Spec.Template.Labels)) {
		t.Error("was-webhook-ingress also admits connections to the controller side")
	}
	webhookPort := intstr.FromString("webhook")
	if len(allow.Spec.Ingress) != 1 || len(allow.Spec.Ingress[0].From) != 0 || len(allow.Spec.Ingress[0].Ports) != 1 ||
		allow.Spec.Ingress[0].Ports[0].Port == nil || *allow.Spec.Ingress[0].Ports[0].Port != webhookPort {
		t.Errorf("was-webhook-ingress rules %+v: want one rule, from anywhere (the API server), to port %q only", allow.Spec.Ingress, webhookPort.StrVal)
	}
}

func TestRenderedKinds(t *testing.T) {
	kinds := map[string]int{}
	for _, o := range rendered(t) {
		kinds[o.GetKind()]++
	}
	t.Logf("rendered: %v", kinds)
	want := []string{"ClusterRole", "ClusterRoleBinding", "DaemonSet", "Namespace", "NetworkPolicy", "Role", "RoleBinding", "Service", "ServiceAccount", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration"}
	if got := slices.Sorted(maps.Keys(kinds)); !slices.Equal(got, want) {
		t.Errorf("kinds %v, want %v", got, want)
	}
}
