// Package config holds the manifests that install the reference
// implementation into a cluster (RBAC, webhook registration), embedded so the
// harness applies exactly the files a user would.
package config

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"io"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

//go:embed rbac.yaml
var rbacYAML []byte

// RBACYAML returns the RBAC manifests.
func RBACYAML() []byte { return rbacYAML }

// RBAC holds the decoded RBAC objects.
type RBAC struct {
	ClusterRoles        []rbacv1.ClusterRole
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
	Roles               []rbacv1.Role
	RoleBindings        []rbacv1.RoleBinding
}

// DecodeRBAC decodes the RBAC manifests strictly.
func DecodeRBAC() (*RBAC, error) {
	out := &RBAC{}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(rbacYAML)))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, err
		}
		var target any
		switch tm.Kind {
		case "ClusterRole":
			out.ClusterRoles = append(out.ClusterRoles, rbacv1.ClusterRole{})
			target = &out.ClusterRoles[len(out.ClusterRoles)-1]
		case "ClusterRoleBinding":
			out.ClusterRoleBindings = append(out.ClusterRoleBindings, rbacv1.ClusterRoleBinding{})
			target = &out.ClusterRoleBindings[len(out.ClusterRoleBindings)-1]
		case "Role":
			out.Roles = append(out.Roles, rbacv1.Role{})
			target = &out.Roles[len(out.Roles)-1]
		case "RoleBinding":
			out.RoleBindings = append(out.RoleBindings, rbacv1.RoleBinding{})
			target = &out.RoleBindings[len(out.RoleBindings)-1]
		case "":
			continue
		default:
			return nil, fmt.Errorf("rbac.yaml: unexpected kind %q", tm.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, target); err != nil {
			return nil, fmt.Errorf("rbac.yaml: %s: %w", tm.Kind, err)
		}
	}
}
