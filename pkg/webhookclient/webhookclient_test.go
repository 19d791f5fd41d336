package webhookclient

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// TestWriteWithNewCA: the kubeconfig presents, to the named webhooks only,
// a client certificate of CommonName that chains to the kept CA, and the
// admission configuration points both webhook plugins at the kubeconfig
// where the API server sees it.
func TestWriteWithNewCA(t *testing.T) {
	dir := t.TempDir()
	if err := WriteWithNewCA(dir, "/etc/kubernetes/x", "*.was-system.svc"); err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.LoadFromFile(filepath.Join(dir, KubeconfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(kc.AuthInfos) != 1 || kc.AuthInfos["*.was-system.svc"] == nil {
		t.Fatalf("users %v, want only *.was-system.svc", kc.AuthInfos)
	}
	block, _ := pem.Decode(kc.AuthInfos["*.was-system.svc"].ClientCertificateData)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil || cert.Subject.CommonName != CommonName {
		t.Fatalf("certificate %q: %v", cert.Subject.CommonName, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ca.key")); err == nil {
		t.Error("the CA's key was kept")
	}
	admission, err := os.ReadFile(filepath.Join(dir, AdmissionConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(admission), `kubeConfigFile: "/etc/kubernetes/x/`+KubeconfigFile+`"`); n != 2 {
		t.Errorf("the admission configuration names the kubeconfig %d times, want 2 (both webhook plugins):\n%s", n, admission)
	}
}
