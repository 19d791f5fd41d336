// Package config holds the manifests that install the reference
// implementation into a cluster: its RBAC and ServiceAccounts (rbac.yaml)
// and its webhook registration (webhook.yaml). deploy/ renders them through
// kustomization.yaml; the harness's local cluster reads them at run time
// through localcluster-addon.yaml. They are embedded so the packaging suite
// checks exactly the files a user applies, wherever it runs.
package config

import "embed"

// Files are the manifests and the kustomization that lists them, by file name.
//
//go:embed kustomization.yaml rbac.yaml webhook.yaml
var Files embed.FS
