package config

import (
	"slices"
	"testing"
)

// TestRBACGrantsExactlyTheKEPVerbs checks the scheduling.k8s.io rules of each
// controller's role against KEP-6276's "Feature Gate and RBAC" section.
func TestRBACGrantsExactlyTheKEPVerbs(t *testing.T) {
	rbac, err := DecodeRBAC()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string][]string{
		"was:deployment-controller": {"workloads": {"get", "list", "watch", "create", "update", "patch"}},
		"was:replicaset-controller": {
			"workloads": {"get", "list", "watch"},
			"podgroups": {"get", "list", "watch", "create", "update", "patch", "delete"},
		},
		"was:controller-manager": {"workloads": {"get", "list", "watch"}, "podgroups": {"get", "list", "watch"}},
		"was:statefulset-controller": {
			"workloads": {"get", "list", "watch", "create", "update", "patch"},
			"podgroups": {"get", "list", "watch", "create", "update", "patch"},
		},
	}
	for _, role := range rbac.ClusterRoles {
		w, ok := want[role.Name]
		if !ok {
			continue
		}
		got := map[string][]string{}
		for _, rule := range role.Rules {
			if !slices.Contains(rule.APIGroups, "scheduling.k8s.io") {
				continue
			}
			for _, res := range rule.Resources {
				got[res] = append(got[res], rule.Verbs...)
			}
		}
		for res, verbs := range w {
			g := slices.Clone(got[res])
			slices.Sort(g)
			v := slices.Clone(verbs)
			slices.Sort(v)
			if !slices.Equal(g, v) {
				t.Errorf("%s on %s: verbs %v, want exactly %v", role.Name, res, g, v)
			}
		}
		if len(got) != len(w) {
			t.Errorf("%s covers scheduling.k8s.io resources %v, want %v", role.Name, got, w)
		}
		delete(want, role.Name)
	}
	for name := range want {
		t.Errorf("ClusterRole %s missing", name)
	}
	if len(rbac.ClusterRoleBindings) != 4 || len(rbac.RoleBindings) != 1 {
		t.Errorf("bindings: %d cluster, %d namespaced; want 4 and 1", len(rbac.ClusterRoleBindings), len(rbac.RoleBindings))
	}
}
