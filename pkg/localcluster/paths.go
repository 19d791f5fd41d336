package localcluster

import (
	"path/filepath"

	"github.com/workload-aware/apps-harness/pkg/webhookclient"
)

// paths is the layout of a cluster's WorkDir.
type paths struct {
	root, pki, logs, etcdData, saKey, saPub, kwokConfig, auditPolicy string
}

func newPaths(root string) paths {
	pki := filepath.Join(root, "pki")
	return paths{
		root:        root,
		pki:         pki,
		logs:        filepath.Join(root, "logs"),
		etcdData:    filepath.Join(root, "etcd-data"),
		saKey:       filepath.Join(pki, "sa.key"),
		saPub:       filepath.Join(pki, "sa.pub"),
		kwokConfig:  filepath.Join(root, "kwok.yaml"),
		auditPolicy: filepath.Join(root, "audit-policy.yaml"),
	}
}

func (p paths) crt(name string) string { return filepath.Join(p.pki, name+".crt") }
func (p paths) key(name string) string { return filepath.Join(p.pki, name+".key") }

// admissionConfig is writeWebhookClient's.
func (p paths) admissionConfig() string {
	return filepath.Join(p.pki, webhookclient.AdmissionConfigFile)
}

// kubeconfig of a component; the admin's is AdminKubeconfig.
func (p paths) kubeconfig(name Component) string {
	return filepath.Join(p.root, "kubeconfig."+string(name))
}
func (p paths) adminKubeconfig() string   { return filepath.Join(p.root, "kubeconfig") }
func (p paths) log(name Component) string { return filepath.Join(p.logs, string(name)+".log") }
func (p paths) certDir(name Component) string {
	return filepath.Join(p.root, "serving-certs", string(name))
}
func (p paths) state() string { return filepath.Join(p.root, "state.json") }

func (p paths) auditLog() string { return filepath.Join(p.logs, "kube-apiserver-audit.log") }
