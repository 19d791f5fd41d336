package deploy

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// leaseName is the controllers' leader-election Lease, in Namespace.
const leaseName = "was-controller-manager"

// TestLeaseIsInTheInstallsNamespace: the controller side names its Lease
// explicitly (not through the binary's default), in was-system, and that is
// the Lease the RBAC grants by name; no grant of either install reaches a
// Lease in kube-system (where kube-controller-manager's and
// kube-scheduler's live).
func TestLeaseIsInTheInstallsNamespace(t *testing.T) {
	objs := rendered(t)
	ds := into[appsv1.DaemonSet](t, objs, "DaemonSet", Namespace, "was-controller-manager")
	f := flags(ds.Spec.Template.Spec.Containers[0].Args)
	if f["leader-elect-resource-namespace"] != Namespace || f["leader-elect-resource-name"] != leaseName {
		t.Errorf("--leader-elect-resource-namespace=%q --leader-elect-resource-name=%q, want %s and %s (the Lease its Role names)",
			f["leader-elect-resource-namespace"], f["leader-elect-resource-name"], Namespace, leaseName)
	}
	local, err := RenderDir("../controllers/config")
	if err != nil {
		t.Fatal(err)
	}
	for what, set := range map[string]func() ([]grant, error){
		"deploy/":            func() ([]grant, error) { return expandGrants(objs) },
		"controllers/config": func() ([]grant, error) { return expandGrants(local) },
	} {
		got, err := set()
		if err != nil {
			t.Fatal(err)
		}
		var leases int
		for _, g := range got {
			if g.Group != "coordination.k8s.io" {
				continue
			}
			leases++
			if g.Namespace != Namespace {
				t.Errorf("%s: %s: a Lease grant outside %s", what, g, Namespace)
			}
			if g.Verb != "create" && g.Name != leaseName {
				t.Errorf("%s: %s: only create may be unnamed (RBAC cannot name a create)", what, g)
			}
		}
		if leases == 0 {
			t.Errorf("%s: no Lease grant", what)
		}
	}
}

// TestLocalClusterNamespaceIsDeploys: the local cluster creates was-system
// from controllers/config/namespace.yaml (for the Lease and its Role), a
// real cluster from deploy/namespace.yaml: the same object.
func TestLocalClusterNamespaceIsDeploys(t *testing.T) {
	var ns [2]corev1.Namespace
	for i, file := range []string{"namespace.yaml", "../controllers/config/namespace.yaml"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(data, &ns[i]); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	if diff := cmp.Diff(ns[0], ns[1]); diff != "" {
		t.Errorf("deploy/namespace.yaml and controllers/config/namespace.yaml differ (-deploy +local):\n%s", diff)
	}
	if ns[0].Name != Namespace {
		t.Errorf("namespace %q, want %q", ns[0].Name, Namespace)
	}
}
