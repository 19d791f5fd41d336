// Package webhookclient writes what makes a kube-apiserver present a
// client certificate to admission webhooks: the certificate, a kubeconfig
// that names the webhooks it is for, and the AdmissionConfiguration
// (--admission-control-config-file) of both webhook plugins that points
// at that kubeconfig. A webhook that requires the certificate (the
// reference's --client-ca-file and --client-allowed-names) then serves the
// API server and refuses everyone else in the TLS handshake.
package webhookclient

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/workload-aware/apps-harness/pkg/pki"
)

// CommonName is the certificate's common name, which a webhook can require.
const CommonName = "kube-apiserver-webhook-client"

// File names in the directory Write fills.
const (
	KubeconfigFile      = "webhook-client.kubeconfig"
	AdmissionConfigFile = "admission-config.yaml"
	CAFile              = "ca.crt" // only when Write is given a new CA to keep
)

const admissionConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]q
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]q
`

// Write issues a CommonName client certificate from ca and writes, into
// dir, the kubeconfig presenting it to the webhooks named user (the API
// server's names: "*" for every webhook, "*.<namespace>.svc" for every
// Service of a namespace, "<service>.<namespace>.svc" for one) and the
// admission configuration. mountedAt is where the API server will see dir
// (the same as dir when it runs on this machine).
func Write(dir, mountedAt, user string, ca *pki.CA) error {
	kp, err := ca.Issue(pki.CertRequest{CommonName: CommonName, Client: true})
	if err != nil {
		return err
	}
	keyPEM, err := pki.KeyPEM(kp.Key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: pki.CertPEM(kp.Cert), ClientKeyData: keyPEM}
	if err := clientcmd.WriteToFile(*cfg, filepath.Join(dir, KubeconfigFile)); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, AdmissionConfigFile),
		fmt.Appendf(nil, admissionConfig, filepath.Join(mountedAt, KubeconfigFile)), 0o600)
}

// WriteWithNewCA is Write with a CA of its own, whose certificate it keeps
// in dir (CAFile) for the webhook to verify against; its key is not kept.
func WriteWithNewCA(dir, mountedAt, user string) error {
	ca, err := pki.NewCA("was-webhook-client-ca")
	if err != nil {
		return err
	}
	if err := Write(dir, mountedAt, user, ca); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, CAFile), pki.CertPEM(ca.Cert), 0o644)
}
