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
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/workload-aware/apps-harness/controllers/admission"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
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

func TestControllerAndWebhookFlags(t *testing.T) {
	objs := rendered(t)
	cfg := localcluster.DefaultConfig("", "", "")
	wantGates := localcluster.FormatFeatureGates(cfg.EffectiveFeatureGates(localcluster.WASControllerManager))
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
		if f["feature-gates"] != wantGates {
			t.Errorf("%s: --feature-gates=%s, want the local cluster's %s", name, f["feature-gates"], wantGates)
		}
		if spec.ServiceAccountName != "was-controller-manager" {
			t.Errorf("%s: serviceAccountName %q", name, spec.ServiceAccountName)
		}
		if spec.NodeSelector["node-role.kubernetes.io/control-plane"] != "" || !slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool {
			return tol.Key == "node-role.kubernetes.io/control-plane" && tol.Operator == corev1.TolerationOpExists
		}) {
			t.Errorf("%s: must run on (and tolerate) the control-plane node: selector %v tolerations %v", name, spec.NodeSelector, spec.Tolerations)
		}
		if _, ok := spec.NodeSelector["node-role.kubernetes.io/control-plane"]; !ok {
			t.Errorf("%s: no control-plane nodeSelector", name)
		}
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/healthz" {
			t.Errorf("%s: needs a /healthz readiness probe (hack/e2e-kind.sh waits for it)", name)
		}
		switch name {
		case "was-controller-manager":
			if got := strings.Split(f["controllers"], ","); !slices.Equal(got, []string{"deployment", "replicaset", "statefulset"}) {
				t.Errorf("%s: --controllers=%s, want all three", name, f["controllers"])
			}
			if _, ok := f["webhook-bind-address"]; ok {
				t.Errorf("%s: the controller side serves no webhook", name)
			}
		case "was-webhook":
			if v, ok := f["controllers"]; !ok || v != "" {
				t.Errorf("%s: --controllers must be given empty (admission only), got %q present=%t", name, v, ok)
			}
			for _, k := range []string{"webhook-bind-address", "self-signed-cert-secret", "self-signed-cert-hosts", "self-signed-ca-bundle-webhook-configuration", "self-signed-cert-dir"} {
				if f[k] == "" {
					t.Errorf("%s: --%s missing", name, k)
				}
			}
			svc := into[corev1.Service](t, objs, "Service", Namespace, "was-webhook")
			if host := fmt.Sprintf("%s.%s.svc", svc.Name, svc.Namespace); !slices.Contains(strings.Split(f["self-signed-cert-hosts"], ","), host) {
				t.Errorf("%s: --self-signed-cert-hosts=%s lacks the Service name %s", name, f["self-signed-cert-hosts"], host)
			}
			if f["self-signed-ca-bundle-webhook-configuration"] != localcluster.WebhookConfigurationName {
				t.Errorf("%s: caBundle goes to %q, want %q", name, f["self-signed-ca-bundle-webhook-configuration"], localcluster.WebhookConfigurationName)
			}
			if !strings.HasPrefix(f["self-signed-cert-secret"], Namespace+"/") {
				t.Errorf("%s: --self-signed-cert-secret=%s: want a Secret in %s (its Role is there)", name, f["self-signed-cert-secret"], Namespace)
			}
			// The Service reaches the webhook port; the selector picks this pod.
			port := svc.Spec.Ports[0].TargetPort.StrVal
			if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool {
				return p.Name == port && strings.HasSuffix(f["webhook-bind-address"], fmt.Sprintf(":%d", p.ContainerPort))
			}) {
				t.Errorf("Service targetPort %q does not name the container port --webhook-bind-address=%s listens on", port, f["webhook-bind-address"])
			}
			for k, v := range svc.Spec.Selector {
				if ds.Spec.Template.Labels[k] != v {
					t.Errorf("Service selector %v does not select the webhook pods %v", svc.Spec.Selector, ds.Spec.Template.Labels)
				}
			}
		}
	}
}

func TestWebhookConfigurationMatchesTheLocalCluster(t *testing.T) {
	objs := rendered(t)
	got := into[admissionregistrationv1.ValidatingWebhookConfiguration](t, objs, "ValidatingWebhookConfiguration", "", localcluster.WebhookConfigurationName)
	want := localcluster.WebhookConfiguration("unused", nil)
	if len(got.Webhooks) != 1 {
		t.Fatalf("%d webhooks, want 1", len(got.Webhooks))
	}
	svc := got.Webhooks[0].ClientConfig.Service
	if svc == nil || svc.Namespace != Namespace || svc.Name != "was-webhook" || svc.Path == nil || *svc.Path != admission.Path {
		t.Errorf("clientConfig.service %+v, want %s/was-webhook path %s", svc, Namespace, admission.Path)
	}
	// Everything but how the apiserver reaches the webhook is the local cluster's.
	got.Webhooks[0].ClientConfig, want.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{}, admissionregistrationv1.WebhookClientConfig{}
	if diff := cmp.Diff(want.Webhooks, got.Webhooks); diff != "" {
		t.Errorf("webhook differs from pkg/localcluster's WebhookConfiguration (-want +got):\n%s", diff)
	}
}

func TestRBACReusesTheControllersConfigAndBindsTheServiceAccount(t *testing.T) {
	objs := rendered(t)
	sa := rbacv1.Subject{Kind: "ServiceAccount", Name: "was-controller-manager", Namespace: Namespace}
	into[corev1.ServiceAccount](t, objs, "ServiceAccount", Namespace, sa.Name)
	crb := into[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", "", "was:controller-manager")
	if !slices.Contains(crb.Subjects, sa) {
		t.Errorf("ClusterRoleBinding was:controller-manager subjects %v lack %v", crb.Subjects, sa)
	}
	// The reused Role stays in kube-system, where the per-controller service
	// accounts are made (no namespace transformer may move it).
	rb := into[rbacv1.RoleBinding](t, objs, "RoleBinding", "kube-system", "was:controller-manager:serviceaccounts")
	if !slices.Contains(rb.Subjects, sa) {
		t.Errorf("RoleBinding kube-system/was:controller-manager:serviceaccounts subjects %v lack %v", rb.Subjects, sa)
	}
	for _, name := range []string{"was:deployment-controller", "was:replicaset-controller", "was:statefulset-controller"} {
		into[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", "", name)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	t.Logf("rendered: %v", kinds)
	if want := []string{"ClusterRole", "ClusterRoleBinding", "DaemonSet", "Namespace", "Role", "RoleBinding", "Service", "ServiceAccount", "ValidatingWebhookConfiguration"}; !slices.Equal(slices.Sorted(maps.Keys(kinds)), want) {
		t.Errorf("kinds %v, want %v", slices.Sorted(maps.Keys(kinds)), want)
	}
}
