// Package pki generates the certificates and keys a local control plane needs:
// one cluster CA, serving certificates for the apiserver, client certificates
// for every component and the admin, and the service-account signing key pair.
//
// Everything is generated in Go at cluster start (ECDSA P-256 keys, which take
// microseconds), so the harness needs no openssl, cfssl or kubeadm binary.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Validity is the default lifetime of a certificate: long enough for any test
// run, short enough that a leaked local CA is useless soon after.
const Validity = 7 * 24 * time.Hour

// clockSkew is how far NotBefore is set into the past, so a peer whose clock
// is slightly behind accepts a certificate issued a moment ago.
const clockSkew = time.Hour

// CA is a certificate authority that can sign serving and client certificates.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// KeyPair is a certificate with its private key.
type KeyPair struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// NewCA creates a self-signed CA with the given common name, valid for Validity.
func NewCA(commonName string) (*CA, error) { return NewCAValidFor(commonName, Validity) }

// NewCAValidFor creates a self-signed CA valid for validity from now.
func NewCAValidFor(commonName string, validity time.Duration) (*CA, error) {
	if validity <= 0 {
		return nil, fmt.Errorf("CA %q: validity %s must be positive", commonName, validity)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-signing CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key}, nil
}

// CertRequest describes a certificate to issue.
type CertRequest struct {
	CommonName   string
	Organization []string
	// DNSNames and IPs are subject alternative names; a serving certificate needs them.
	DNSNames []string
	IPs      []net.IP
	// Server and Client select the extended key usages.
	Server, Client bool
	// Validity is the lifetime from now; zero means Validity. A certificate
	// never outlives its CA: NotAfter is capped at the CA's.
	Validity time.Duration
}

// Issue signs a new certificate for req with the CA.
func (ca *CA) Issue(req CertRequest) (*KeyPair, error) {
	if req.CommonName == "" {
		return nil, fmt.Errorf("certificate request has no common name")
	}
	if !req.Server && !req.Client {
		return nil, fmt.Errorf("certificate %q: request neither server nor client usage", req.CommonName)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key for %q: %w", req.CommonName, err)
	}
	var usages []x509.ExtKeyUsage
	if req.Server {
		usages = append(usages, x509.ExtKeyUsageServerAuth)
	}
	if req.Client {
		usages = append(usages, x509.ExtKeyUsageClientAuth)
	}
	validity := req.Validity
	if validity == 0 {
		validity = Validity
	}
	if validity < 0 {
		return nil, fmt.Errorf("certificate %q: negative validity %s", req.CommonName, validity)
	}
	now := time.Now()
	notAfter := now.Add(validity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: req.CommonName, Organization: req.Organization},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usages,
		DNSNames:     req.DNSNames,
		IPAddresses:  req.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("signing certificate for %q: %w", req.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &KeyPair{Cert: cert, Key: key}, nil
}

// ParseCA reads a CA back from PEM (as CertPEM and KeyPEM wrote it): the
// first certificate of certPEM, which must be a CA, and its private key.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	cert := certs[0]
	if !cert.IsCA || !cert.BasicConstraintsValid {
		return nil, fmt.Errorf("certificate %q is not a CA", cert.Subject.CommonName)
	}
	parsed, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("CA key of type %T cannot sign", parsed)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, fmt.Errorf("CA key does not belong to certificate %q", cert.Subject.CommonName)
	}
	return &CA{Cert: cert, Key: key}, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	eq, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && eq.Equal(b)
}

// NewServiceAccountKey returns the RSA key the apiserver signs service-account
// tokens with (RS256 is what every Kubernetes client verifies out of the box).
func NewServiceAccountKey() (*rsa.PrivateKey, error) {
	return rsa.GenerateKey(rand.Reader, 2048)
}

// CertPEM encodes a certificate.
func CertPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// KeyPEM encodes a private key (ECDSA as "EC PRIVATE KEY", RSA as "RSA PRIVATE KEY").
func KeyPEM(key crypto.Signer) ([]byte, error) {
	return keyutil.MarshalPrivateKeyToPEM(key)
}

// PublicKeyPEM encodes the public half of key.
func PublicKeyPEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// WriteCA writes ca.crt and ca.key into dir.
func (ca *CA) Write(dir string) (certPath, keyPath string, err error) {
	return writePair(dir, "ca", ca.Cert, ca.Key)
}

// Write writes <name>.crt and <name>.key into dir.
func (kp *KeyPair) Write(dir, name string) (certPath, keyPath string, err error) {
	return writePair(dir, name, kp.Cert, kp.Key)
}

func writePair(dir, name string, cert *x509.Certificate, key crypto.Signer) (string, string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	keyPEM, err := KeyPEM(key)
	if err != nil {
		return "", "", fmt.Errorf("encoding key %s: %w", name, err)
	}
	certPath, keyPath := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certPath, CertPEM(cert), 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	return certPath, keyPath, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(fmt.Sprintf("reading randomness: %v", err))
	}
	return n
}
