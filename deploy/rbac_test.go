package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// The RBAC golden test, in the spirit of Kubernetes' bootstrap-policy tests:
// every permission the manifests grant, expanded to (subject, namespace,
// group, resource, verb, name), must be in the expected list below, where
// each entry says which code path or KEP sentence needs it; and every entry
// must be granted. Adding a grant means adding it here with its reason.

// grant is one permission of one subject. Namespace "" is cluster-wide;
// Name "" is any object.
type grant struct {
	Subject   string
	Namespace string
	Group     string
	Resource  string
	Verb      string
	Name      string
}

func (g grant) String() string {
	where := "cluster-wide"
	if g.Namespace != "" {
		where = "in " + g.Namespace
	}
	obj := g.Resource
	if g.Group != "" {
		obj = g.Group + "/" + g.Resource
	}
	if g.Name != "" {
		obj += " named " + g.Name
	}
	return fmt.Sprintf("%s may %s %s %s", g.Subject, g.Verb, obj, where)
}

// expected is a group of grants and why the code needs them.
type expected struct {
	why    string
	grants []grant
}

// grants expands one rule shape: every verb on every resource (and name).
func grants(subject, namespace, group string, resources, verbs, names []string) []grant {
	if len(names) == 0 {
		names = []string{""}
	}
	var out []grant
	for _, r := range resources {
		for _, v := range verbs {
			for _, n := range names {
				out = append(out, grant{subject, namespace, group, r, v, n})
			}
		}
	}
	return out
}

// The controllers' service accounts: their tokens are the only ones the
// controller side may request.
var controllerAccounts = []string{"deployment-controller", "replicaset-controller", "statefulset-controller"}

func sa(namespace, name string) string { return "ServiceAccount " + namespace + "/" + name }

// controllerSide is what the identity running the controllers needs.
func controllerSide(subject string) []expected {
	return []expected{
		{"main.go startControllers: the shared informers (Pods for both controllers, PVCs for the StatefulSet controller); reads go through the caches", grants(subject, "", "", []string{"pods", "persistentvolumeclaims"}, []string{"list", "watch"}, nil)},
		{"main.go startControllers: the Deployment, ReplicaSet and StatefulSet informers (ControllerRevisions: the upstream StatefulSet controller's history)", grants(subject, "", "apps", []string{"deployments", "replicasets", "statefulsets", "controllerrevisions"}, []string{"list", "watch"}, nil)},
		{"controllers/schedulingapi: the Workload and PodGroup informers", grants(subject, "", "scheduling.k8s.io", []string{"workloads", "podgroups"}, []string{"list", "watch"}, nil)},
		{"main.go startControllers: clientbuilder reads each controller's service account before requesting its token (kube-controller-manager's --use-service-account-credentials)", grants(subject, "kube-system", "", []string{"serviceaccounts"}, []string{"get"}, controllerAccounts)},
		{"main.go startControllers: a token per controller (TokenRequest), for these three accounts only", grants(subject, "kube-system", "", []string{"serviceaccounts/token"}, []string{"create"}, controllerAccounts)},
		{"leaderelection.go: acquiring the Lease was-system/was-controller-manager, in the install's own namespace (create cannot be limited by name)", grants(subject, Namespace, "coordination.k8s.io", []string{"leases"}, []string{"create"}, nil)},
		{"leaderelection.go: renewing, taking over and releasing the Lease (release is an update)", grants(subject, Namespace, "coordination.k8s.io", []string{"leases"}, []string{"get", "update"}, []string{leaseName})},
	}
}

// webhookSide is what the identity serving the webhook needs.
func webhookSide(subject string) []expected {
	return []expected{
		{"main.go startWebhook: a deployments/scale review carries only the Scale; KEP-6276 rejects a scale below an explicit minCount, so the webhook reads the Deployment, from a watched cache (admission.DeploymentReader) or live when the cache lags", grants(subject, "", "apps", []string{"deployments"}, []string{"get", "list", "watch"}, nil)},
	}
}

// selfSignedCertificate is what the webhook's certificate lifecycle
// (selfsigned.go) needs in deploy/.
func selfSignedCertificate(subject string) []expected {
	return []expected{
		{"selfsigned.go ensureSecret: the first webhook pod creates the Secret (create cannot be limited by name)", grants(subject, Namespace, "", []string{"secrets"}, []string{"create"}, nil)},
		{"selfsigned.go ensureSecret: every pod reads the Secret and renews or replaces it; rewrite deletes one whose type or immutability forbids an update, to create it again", grants(subject, Namespace, "", []string{"secrets"}, []string{"get", "update", "delete"}, []string{"was-webhook-tls"})},
		{"selfsigned.go rewrite: an event on the Secret when it is renewed or replaced (the recorder creates, then patches repeats)", grants(subject, Namespace, "", []string{"events"}, []string{"create", "patch"}, nil)},
		{"selfsigned.go setCABundle: the CA into its own webhook configuration's caBundle", grants(subject, "", "admissionregistration.k8s.io", []string{"validatingwebhookconfigurations"}, []string{"get", "update"}, []string{"was-harness-apps-admission"})},
	}
}

// controllers are the scheduling.k8s.io grants of each controller's own
// identity, as the KEPs list them.
func controllers() []expected {
	dc, rsc, ssc := sa("kube-system", "deployment-controller"), sa("kube-system", "replicaset-controller"), sa("kube-system", "statefulset-controller")
	return []expected{
		{`KEP-6276: "The deployment-controller ClusterRole grants get, list, watch, create, update, and patch on scheduling.k8s.io/workloads"`, grants(dc, "", "scheduling.k8s.io", []string{"workloads"}, []string{"get", "list", "watch", "create", "update", "patch"}, nil)},
		{`KEP-6276: "The replicaset-controller ClusterRole grants get, list, and watch on scheduling.k8s.io/workloads"`, grants(rsc, "", "scheduling.k8s.io", []string{"workloads"}, []string{"get", "list", "watch"}, nil)},
		{`KEP-6276: "... get, list, watch, create, update, patch, and delete on scheduling.k8s.io/podgroups"`, grants(rsc, "", "scheduling.k8s.io", []string{"podgroups"}, []string{"get", "list", "watch", "create", "update", "patch", "delete"}, nil)},
		{"KEP-6277 lists none: controllers/statefulset creates, reads and updates (minCount) its Workload and PodGroup; never patches or deletes them (garbage collection does)", grants(ssc, "", "scheduling.k8s.io", []string{"workloads", "podgroups"}, []string{"get", "list", "watch", "create", "update"}, nil)},
	}
}

// TestLocalClusterRBACGrantsOnlyWhatTheCodeUses: controllers/config, as the
// harness's local cluster installs it: both processes run as the user
// was-controller-manager.
func TestLocalClusterRBACGrantsOnlyWhatTheCodeUses(t *testing.T) {
	objs, err := RenderDir("../controllers/config")
	if err != nil {
		t.Fatal(err)
	}
	user := "User was-controller-manager"
	want := append(append(controllerSide(user), webhookSide(user)...), controllers()...)
	compareGrants(t, objs, want)
	expectServiceAccounts(t, objs, []string{"kube-system/deployment-controller", "kube-system/replicaset-controller", "kube-system/statefulset-controller"})
}

// TestDeployRBACGrantsOnlyWhatTheCodeUses: the rendered deploy/: the
// controller side and the webhook each under a ServiceAccount of their own,
// and nothing bound to a user name.
func TestDeployRBACGrantsOnlyWhatTheCodeUses(t *testing.T) {
	objs := rendered(t)
	cm, wh := sa(Namespace, "was-controller-manager"), sa(Namespace, "was-webhook")
	want := append(append(append(controllerSide(cm), webhookSide(wh)...), selfSignedCertificate(wh)...), controllers()...)
	compareGrants(t, objs, want)
	expectServiceAccounts(t, objs, []string{"kube-system/deployment-controller", "kube-system/replicaset-controller", "kube-system/statefulset-controller",
		Namespace + "/was-controller-manager", Namespace + "/was-webhook"})
}

// TestGrantTableCatchesAnExtraGrant makes sure the comparison can fail: a
// wildcard verb added to a rendered role is reported.
func TestGrantTableCatchesAnExtraGrant(t *testing.T) {
	objs := rendered(t)
	for _, o := range objs {
		if o.GetKind() == "Role" && o.GetName() == "was:controller-manager:serviceaccounts" {
			rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
			rules = append(rules, map[string]any{"apiGroups": []any{""}, "resources": []any{"serviceaccounts/token"}, "verbs": []any{"create"}})
			if err := unstructured.SetNestedSlice(o.Object, rules, "rules"); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := expandGrants(objs)
	if err != nil {
		t.Fatal(err)
	}
	extra := grant{sa(Namespace, "was-controller-manager"), "kube-system", "", "serviceaccounts/token", "create", ""}
	if !slices.Contains(got, extra) {
		t.Fatalf("an unrestricted token grant was not expanded; got %v", got)
	}
	if isExpected(extra, append(controllerSide(extra.Subject), controllers()...)) {
		t.Fatal("an unrestricted token grant counts as expected")
	}
}

func isExpected(g grant, want []expected) bool {
	for _, e := range want {
		if slices.Contains(e.grants, g) {
			return true
		}
	}
	return false
}

func compareGrants(t *testing.T, objs []*unstructured.Unstructured, want []expected) {
	t.Helper()
	got, err := expandGrants(objs)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range got {
		if !isExpected(g, want) {
			t.Errorf("unexpected grant: %s. If the code needs it, add it to the expected list in rbac_test.go with the code path or KEP text that needs it.", g)
		}
	}
	for _, e := range want {
		for _, g := range e.grants {
			if !slices.Contains(got, g) {
				t.Errorf("missing grant: %s (needed by %s)", g, e.why)
			}
		}
	}
}

func expectServiceAccounts(t *testing.T, objs []*unstructured.Unstructured, want []string) {
	t.Helper()
	var got []string
	for _, o := range objs {
		if o.GetKind() == "ServiceAccount" {
			got = append(got, o.GetNamespace()+"/"+o.GetName())
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ServiceAccounts %v, want %v", got, want)
	}
}

// expandGrants flattens every binding of the manifests into grants. A
// binding to a role the manifests lack, a role nobody binds, a subject kind
// other than User or ServiceAccount, and a non-resource URL are errors: the
// install must be readable from its own files.
func expandGrants(objs []*unstructured.Unstructured) ([]grant, error) {
	clusterRoles := map[string][]rbacv1.PolicyRule{}
	roles := map[string][]rbacv1.PolicyRule{} // namespace/name
	var crbs []rbacv1.ClusterRoleBinding
	var rbs []rbacv1.RoleBinding
	decode := func(o *unstructured.Unstructured, into any) error {
		return runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, into, true)
	}
	for _, o := range objs {
		var err error
		switch o.GetKind() {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			err = decode(o, &r)
			if r.AggregationRule != nil {
				return nil, fmt.Errorf("ClusterRole %s aggregates other roles", r.Name)
			}
			clusterRoles[r.Name] = r.Rules
		case "Role":
			var r rbacv1.Role
			err = decode(o, &r)
			roles[r.Namespace+"/"+r.Name] = r.Rules
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			err = decode(o, &b)
			crbs = append(crbs, b)
		case "RoleBinding":
			var b rbacv1.RoleBinding
			err = decode(o, &b)
			rbs = append(rbs, b)
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	bound := map[string]bool{}
	var out []grant
	expand := func(binding string, subjects []rbacv1.Subject, namespace string, rules []rbacv1.PolicyRule) error {
		for _, s := range subjects {
			var subject string
			switch s.Kind {
			case rbacv1.UserKind:
				subject = "User " + s.Name
			case rbacv1.ServiceAccountKind:
				subject = sa(s.Namespace, s.Name)
			default:
				return fmt.Errorf("binding %s: subject kind %s", binding, s.Kind)
			}
			for _, r := range rules {
				if len(r.NonResourceURLs) > 0 {
					return fmt.Errorf("binding %s grants non-resource URLs %v", binding, r.NonResourceURLs)
				}
				for _, group := range r.APIGroups {
					out = append(out, grants(subject, namespace, group, r.Resources, r.Verbs, r.ResourceNames)...)
				}
			}
		}
		return nil
	}
	for _, b := range crbs {
		rules, ok := clusterRoles[b.RoleRef.Name]
		if b.RoleRef.Kind != "ClusterRole" || !ok {
			return nil, fmt.Errorf("ClusterRoleBinding %s refers to %s %s, not in the manifests", b.Name, b.RoleRef.Kind, b.RoleRef.Name)
		}
		bound["ClusterRole "+b.RoleRef.Name] = true
		if err := expand("ClusterRoleBinding "+b.Name, b.Subjects, "", rules); err != nil {
			return nil, err
		}
	}
	for _, b := range rbs {
		var rules []rbacv1.PolicyRule
		var ok bool
		switch b.RoleRef.Kind {
		case "ClusterRole":
			rules, ok = clusterRoles[b.RoleRef.Name]
			bound["ClusterRole "+b.RoleRef.Name] = true
		case "Role":
			rules, ok = roles[b.Namespace+"/"+b.RoleRef.Name]
			bound["Role "+b.Namespace+"/"+b.RoleRef.Name] = true
		}
		if !ok {
			return nil, fmt.Errorf("RoleBinding %s/%s refers to %s %s, not in the manifests", b.Namespace, b.Name, b.RoleRef.Kind, b.RoleRef.Name)
		}
		if err := expand("RoleBinding "+b.Namespace+"/"+b.Name, b.Subjects, b.Namespace, rules); err != nil {
			return nil, err
		}
	}
	var unbound []string
	for name := range clusterRoles {
		if !bound["ClusterRole "+name] {
			unbound = append(unbound, "ClusterRole "+name)
		}
	}
	for name := range roles {
		if !bound["Role "+name] {
			unbound = append(unbound, "Role "+name)
		}
	}
	if len(unbound) > 0 {
		slices.Sort(unbound)
		return nil, fmt.Errorf("roles nobody is bound to: %s", strings.Join(unbound, ", "))
	}
	return out, nil
}
