package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestIssuedCertificatesVerifyAgainstTheCA(t *testing.T) {
	ca, err := NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA {
		t.Fatal("CA certificate is not marked as a CA")
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)

	server, err := ca.Issue(CertRequest{CommonName: "kube-apiserver", DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := server.Cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("serving certificate does not verify for 127.0.0.1: %v", err)
	}
	if _, err := server.Cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("a server-only certificate verified for client auth")
	}

	client, err := ca.Issue(CertRequest{CommonName: "kubernetes-admin", Organization: []string{"system:masters"}, Client: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate does not verify: %v", err)
	}
	if got := client.Cert.Subject.Organization; len(got) != 1 || got[0] != "system:masters" {
		t.Errorf("client organization = %v, want [system:masters] (RBAC group)", got)
	}

	other, _ := NewCA("other-ca")
	foreign, _ := other.Issue(CertRequest{CommonName: "x", Client: true})
	if _, err := foreign.Cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("a certificate of another CA verified")
	}
}

func TestIssueRejectsIncompleteRequests(t *testing.T) {
	ca, err := NewCA("ca")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Issue(CertRequest{Client: true}); err == nil {
		t.Error("a request without a common name was accepted")
	}
	if _, err := ca.Issue(CertRequest{CommonName: "x"}); err == nil {
		t.Error("a request with neither server nor client usage was accepted")
	}
}

func TestWrittenPairsLoadAsTLSKeyPairs(t *testing.T) {
	dir := t.TempDir()
	ca, _ := NewCA("ca")
	kp, err := ca.Issue(CertRequest{CommonName: "c", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath, err := kp.Write(dir, "client")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.LoadX509KeyPair(certPath, keyPath); err != nil {
		t.Errorf("written pair does not load: %v", err)
	}
	st, err := os.Stat(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key file mode = %v, want 0600", st.Mode().Perm())
	}
	if _, _, err := ca.Write(filepath.Join(dir, "nested", "pki")); err != nil {
		t.Errorf("writing the CA into a new directory: %v", err)
	}
}

func TestServiceAccountKeyEncodes(t *testing.T) {
	key, err := NewServiceAccountKey()
	if err != nil {
		t.Fatal(err)
	}
	if key.N.BitLen() < 2048 {
		t.Errorf("service-account key has %d bits, want >= 2048", key.N.BitLen())
	}
	priv, err := KeyPEM(key)
	if err != nil || len(priv) == 0 {
		t.Fatalf("encoding private key: %v", err)
	}
	pub, err := PublicKeyPEM(key)
	if err != nil || len(pub) == 0 {
		t.Fatalf("encoding public key: %v", err)
	}
}

func TestValidityIsChosenAndCappedAtTheCA(t *testing.T) {
	ca, err := NewCAValidFor("short-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Until(ca.Cert.NotAfter); got > time.Hour || got < 59*time.Minute {
		t.Errorf("CA valid for %s more, want about 1h", got)
	}
	leaf, err := ca.Issue(CertRequest{CommonName: "w", DNSNames: []string{"w"}, Server: true, Validity: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Until(leaf.Cert.NotAfter); got > 2*time.Minute || got < time.Minute {
		t.Errorf("leaf valid for %s more, want about 2m", got)
	}
	long, err := ca.Issue(CertRequest{CommonName: "w", Server: true, Validity: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if long.Cert.NotAfter.After(ca.Cert.NotAfter) {
		t.Errorf("leaf expires %s, after its CA %s", long.Cert.NotAfter, ca.Cert.NotAfter)
	}
	if _, err := NewCAValidFor("x", 0); err == nil {
		t.Error("a CA without validity was made")
	}
}

func TestParseCARoundTripsAndRejectsAForeignKey(t *testing.T) {
	ca, _ := NewCA("ca")
	key, _ := KeyPEM(ca.Key)
	back, err := ParseCA(CertPEM(ca.Cert), key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := back.Issue(CertRequest{CommonName: "s", Server: true})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: roots}); err != nil {
		t.Errorf("a certificate issued by the parsed CA does not verify: %v", err)
	}
	other, _ := NewCA("other")
	otherKey, _ := KeyPEM(other.Key)
	if _, err := ParseCA(CertPEM(ca.Cert), otherKey); err == nil {
		t.Error("a CA certificate with another CA's key was accepted")
	}
	kp, _ := ca.Issue(CertRequest{CommonName: "leaf", Server: true})
	kpKey, _ := KeyPEM(kp.Key)
	if _, err := ParseCA(CertPEM(kp.Cert), kpKey); err == nil {
		t.Error("a leaf certificate was accepted as a CA")
	}
}
