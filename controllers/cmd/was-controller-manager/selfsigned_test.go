package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	certutil "k8s.io/client-go/util/cert"

	"github.com/workload-aware/apps-harness/pkg/pki"
)

const (
	testNamespace = "was-system"
	testSecret    = "was-webhook-tls"
	testWebhook   = "wc"
)

var testHosts = []string{"was-webhook.was-system.svc", "127.0.0.1"}

func newTestCertificate(t *testing.T, client *fake.Clientset, validity time.Duration) (*selfSignedCertificate, *record.FakeRecorder) {
	t.Helper()
	recorder := record.NewFakeRecorder(10)
	opts := selfSignedOptions{secret: testNamespace + "/" + testSecret, hosts: testHosts, webhookConfiguration: testWebhook, validity: validity, timeout: time.Second}
	if err := opts.validate(); err != nil {
		t.Fatal(err)
	}
	return newSelfSignedCertificate(opts, client, recorder), recorder
}

func newTestClient() *fake.Clientset {
	return fake.NewClientset(&admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: testWebhook}, Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a"}},
	})
}

func getSecret(t *testing.T, client *fake.Clientset) *corev1.Secret {
	t.Helper()
	s, err := client.CoreV1().Secrets(testNamespace).Get(context.Background(), testSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func caBundle(t *testing.T, client *fake.Clientset) []byte {
	t.Helper()
	wc, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), testWebhook, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return wc.Webhooks[0].ClientConfig.CABundle
}

// served returns the certificate a TLS client is shown now.
func served(t *testing.T, c certificateSource) *x509.Certificate {
	t.Helper()
	cert, err := c.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return cert.Leaf
}

func expectTrusted(t *testing.T, leaf *x509.Certificate, bundle []byte) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		t.Fatal("caBundle holds no certificate")
	}
	for _, host := range testHosts {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("serving certificate for %s does not verify against the caBundle: %v", host, err)
		}
	}
}

func expectEvent(t *testing.T, recorder *record.FakeRecorder, want string) {
	t.Helper()
	select {
	case ev := <-recorder.Events:
		if !strings.HasPrefix(ev, want) {
			t.Errorf("event %q, want one starting %q", ev, want)
		}
	default:
		t.Errorf("no event, want %q", want)
	}
}

func expectNoEvent(t *testing.T, recorder *record.FakeRecorder) {
	t.Helper()
	select {
	case ev := <-recorder.Events:
		t.Errorf("unexpected event %q", ev)
	default:
	}
}

// writeSecretData replaces the stored Secret's data (a test's way to age it).
func writeSecretData(t *testing.T, client *fake.Clientset, mutate func(*corev1.Secret)) {
	t.Helper()
	s := getSecret(t, client)
	mutate(s)
	if _, err := client.CoreV1().Secrets(testNamespace).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func storedCA(t *testing.T, s *corev1.Secret) *pki.CA {
	t.Helper()
	ca, err := pki.ParseCA(s.Data[caCertKey], s.Data[caKeyKey])
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// issueInto puts a serving certificate of ca with the given validity into the stored Secret.
func issueInto(t *testing.T, client *fake.Clientset, ca *pki.CA, validity time.Duration) {
	t.Helper()
	kp, err := ca.Issue(pki.CertRequest{CommonName: testHosts[0], DNSNames: testHosts[:1], IPs: []net.IP{net.ParseIP(testHosts[1])}, Server: true, Validity: validity})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := pki.KeyPEM(kp.Key)
	writeSecretData(t, client, func(s *corev1.Secret) {
		s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey] = pki.CertPEM(kp.Cert), key
	})
}

// TestSelfSignedCertificateIsCreatedKeptAndTrustedByTheCABundle: the first
// sync creates a marked Secret and sets the caBundle; later syncs and other
// replicas serve the same certificate and write nothing.
func TestSelfSignedCertificateIsCreatedKeptAndTrustedByTheCABundle(t *testing.T) {
	ctx := context.Background()
	client := newTestClient()
	first, recorder := newTestCertificate(t, client, time.Hour)
	if err := first.sync(ctx); err != nil {
		t.Fatal(err)
	}
	secret := getSecret(t, client)
	if secret.Labels[managedByLabel] != managedByValue || secret.Type != corev1.SecretTypeTLS {
		t.Errorf("created Secret labels %v type %s: want our marking and kubernetes.io/tls", secret.Labels, secret.Type)
	}
	leaf := served(t, first)
	expectTrusted(t, leaf, caBundle(t, client))
	if left := time.Until(leaf.NotAfter); left > time.Hour || left < 59*time.Minute {
		t.Errorf("certificate valid for %s more, want --self-signed-cert-validity=1h", left)
	}
	if left := time.Until(storedCA(t, secret).Cert.NotAfter); left < 9*time.Hour {
		t.Errorf("CA valid for %s more, want %d times the certificate's validity", left, caValidityFactor)
	}
	expectNoEvent(t, recorder)

	replica, _ := newTestCertificate(t, client, time.Hour)
	if err := replica.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if !served(t, replica).Equal(leaf) || !served(t, first).Equal(leaf) {
		t.Error("a replica or a later sync serves another certificate than the stored one")
	}
	if got := getSecret(t, client).ResourceVersion; got != secret.ResourceVersion {
		t.Errorf("the Secret was rewritten (resourceVersion %s -> %s) though its certificate is fresh", secret.ResourceVersion, got)
	}
}

// TestSelfSignedCertificateIsRenewedFromTheSameCA: a certificate with less
// than a third of its life left is renewed from the stored CA, so the
// caBundle does not change, and the new one is served at the next handshake.
func TestSelfSignedCertificateIsRenewedFromTheSameCA(t *testing.T) {
	ctx := context.Background()
	client := newTestClient()
	c, recorder := newTestCertificate(t, client, time.Hour)
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	bundle := caBundle(t, client)
	ca := storedCA(t, getSecret(t, client))
	issueInto(t, client, ca, 15*time.Minute) // a quarter of its life left
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, recorder, "Normal "+reasonCertificateRenewed)
	expectNoEvent(t, recorder) // renewed once, then kept
	leaf := served(t, c)
	if left := time.Until(leaf.NotAfter); left < 59*time.Minute {
		t.Errorf("served certificate has %s left after the renewal", left)
	}
	if got := caBundle(t, client); string(got) != string(bundle) {
		t.Error("the caBundle changed on a renewal: the CA must be reused")
	}
	if !storedCA(t, getSecret(t, client)).Cert.Equal(ca.Cert) {
		t.Error("the stored CA changed on a renewal")
	}
	expectTrusted(t, leaf, bundle)
}

// TestUntrustedSecretIsReplacedWithAnEvent: a Secret without our marking, or
// whose certificate its CA did not sign, is replaced whole, and its CA never
// reaches the caBundle.
func TestUntrustedSecretIsReplacedWithAnEvent(t *testing.T) {
	ctx := context.Background()
	planted, _ := pki.NewCA("someone-else")
	kp, _ := planted.Issue(pki.CertRequest{CommonName: testHosts[0], DNSNames: testHosts[:1], IPs: []net.IP{net.ParseIP(testHosts[1])}, Server: true})
	key, _ := pki.KeyPEM(kp.Key)
	caKey, _ := pki.KeyPEM(planted.Key)
	plantedData := map[string][]byte{
		corev1.TLSCertKey: pki.CertPEM(kp.Cert), corev1.TLSPrivateKeyKey: key, caCertKey: pki.CertPEM(planted.Cert), caKeyKey: caKey,
	}
	foreign, _ := pki.NewCA("foreign")
	for _, tc := range []struct {
		name   string
		labels map[string]string
		mutate func(map[string][]byte)
		reason string
	}{
		{name: "no owner marking", reason: "lacks the label"},
		{name: "certificate not issued by its CA", labels: map[string]string{managedByLabel: managedByValue}, reason: "not issued by its CA",
			mutate: func(d map[string][]byte) {
				fkp, _ := foreign.Issue(pki.CertRequest{CommonName: testHosts[0], DNSNames: testHosts, Server: true})
				fkey, _ := pki.KeyPEM(fkp.Key)
				d[corev1.TLSCertKey], d[corev1.TLSPrivateKeyKey] = pki.CertPEM(fkp.Cert), fkey
			}},
		{name: "CA key of another CA", labels: map[string]string{managedByLabel: managedByValue}, reason: "CA is unusable",
			mutate: func(d map[string][]byte) { d[caKeyKey], _ = pki.KeyPEM(foreign.Key) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := map[string][]byte{}
			for k, v := range plantedData {
				data[k] = v
			}
			if tc.mutate != nil {
				tc.mutate(data)
			}
			client := newTestClient()
			_, err := client.CoreV1().Secrets(testNamespace).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: testSecret, Namespace: testNamespace, Labels: tc.labels}, Data: data,
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c, recorder := newTestCertificate(t, client, time.Hour)
			if err := c.sync(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case ev := <-recorder.Events:
				if !strings.HasPrefix(ev, "Warning "+reasonCertificateReplaced) || !strings.Contains(ev, tc.reason) {
					t.Errorf("event %q, want a Warning %s saying %q", ev, reasonCertificateReplaced, tc.reason)
				}
			default:
				t.Errorf("no event for a replaced Secret")
			}
			secret := getSecret(t, client)
			if secret.Labels[managedByLabel] != managedByValue {
				t.Error("the replaced Secret lacks our marking")
			}
			bundle := caBundle(t, client)
			certs, err := certutil.ParseCertsPEM(bundle)
			if err != nil {
				t.Fatal(err)
			}
			for _, cert := range certs {
				if cert.Equal(planted.Cert) || cert.Equal(foreign.Cert) {
					t.Errorf("the caBundle trusts the planted CA %s", cert.Subject.CommonName)
				}
			}
			expectTrusted(t, served(t, c), bundle)
		})
	}
}

// TestCARotationKeepsTheOldCAInTheBundle: a CA near its end is replaced by
// a new one, and the bundle holds both until the old one expires, so a
// replica still serving a certificate of the old CA keeps being trusted.
func TestCARotationKeepsTheOldCAInTheBundle(t *testing.T) {
	ctx := context.Background()
	client := newTestClient()
	c, recorder := newTestCertificate(t, client, time.Hour)
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	// Age the CA: one that expires in 90 minutes (less than two certificate lifetimes).
	old, _ := pki.NewCAValidFor("was-webhook-ca", 90*time.Minute)
	oldKey, _ := pki.KeyPEM(old.Key)
	writeSecretData(t, client, func(s *corev1.Secret) { s.Data[caCertKey], s.Data[caKeyKey] = pki.CertPEM(old.Cert), oldKey })
	issueInto(t, client, old, time.Hour)
	oldLeaf, _ := tls.X509KeyPair(getSecret(t, client).Data[corev1.TLSCertKey], getSecret(t, client).Data[corev1.TLSPrivateKeyKey])

	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, recorder, "Normal "+reasonCARotated)
	secret := getSecret(t, client)
	current := storedCA(t, secret)
	if current.Cert.Equal(old.Cert) {
		t.Fatal("the CA was not rotated")
	}
	bundle := caBundle(t, client)
	certs, _ := certutil.ParseCertsPEM(bundle)
	if len(certs) != 2 || !certs[0].Equal(current.Cert) || !certs[1].Equal(old.Cert) {
		t.Errorf("caBundle holds %d certificates, want the new CA then the old one", len(certs))
	}
	expectTrusted(t, served(t, c), bundle)
	expectTrusted(t, oldLeaf.Leaf, bundle)
}

// TestReadinessFailsNearExpiry: /healthz fails once the served certificate
// has less than a tenth of its life left (renewal has failed for long).
func TestReadinessFailsNearExpiry(t *testing.T) {
	c, _ := newTestCertificate(t, newTestClient(), time.Hour)
	if err := c.Check(); err == nil {
		t.Error("ready without a certificate")
	}
	ca, _ := pki.NewCA("ca")
	for _, tc := range []struct {
		left  time.Duration
		ready bool
	}{{30 * time.Minute, true}, {5 * time.Minute, false}} {
		kp, _ := ca.Issue(pki.CertRequest{CommonName: "w", Server: true, Validity: tc.left})
		key, _ := pki.KeyPEM(kp.Key)
		pair, err := tls.X509KeyPair(pki.CertPEM(kp.Cert), key)
		if err != nil {
			t.Fatal(err)
		}
		c.serving.Store(&pair)
		if err := c.Check(); (err == nil) != tc.ready {
			t.Errorf("%s left: Check() = %v, want ready %t", tc.left, err, tc.ready)
		}
	}
}

// TestWebhookServesTheRenewedCertificateWithoutRestart: the TLS server looks
// the certificate up per handshake, and drops its idle connections on a
// renewal, so a client with a kept-alive connection (as the API server
// keeps them) sees the renewed certificate on its next request, from the
// same listener.
func TestWebhookServesTheRenewedCertificateWithoutRestart(t *testing.T) {
	ctx := context.Background()
	client := newTestClient()
	c, _ := newTestCertificate(t, client, time.Hour)
	// The server as startWebhook builds it (httptest would add a certificate of its own).
	srv := newWebhookServer("127.0.0.1:0", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLSConfig = webhookTLSConfig(c)
	c.onRenewed = func() { dropIdleConnections(srv) }
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, srv)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caBundle(t, client))
	kept := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}}}
	request := func() *x509.Certificate {
		resp, err := kept.Get("https://" + addr)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.TLS.PeerCertificates[0]
	}
	before := request()
	if again := request(); !again.Equal(before) {
		t.Fatal("the certificate changed without a renewal")
	}
	issueInto(t, client, storedCA(t, getSecret(t, client)), 10*time.Minute)
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	after := request()
	if after.Equal(before) {
		t.Fatal("a kept-alive client still sees the certificate the server started with")
	}
	if !after.Equal(served(t, c)) {
		t.Error("the listener serves another certificate than the renewed one")
	}
}

func TestSelfSignedOptionsValidate(t *testing.T) {
	for _, tc := range []selfSignedOptions{
		{secret: "noslash", hosts: testHosts, validity: time.Hour},
		{secret: "ns/name", validity: time.Hour},
		{secret: "ns/name", hosts: testHosts, validity: time.Second},
	} {
		if err := tc.validate(); err == nil {
			t.Errorf("%+v accepted", tc)
		}
	}
	two := selfSignedOptions{validity: 2 * time.Minute}
	if two.checkInterval() > 10*time.Second || two.renewBefore() != 40*time.Second {
		t.Errorf("2m validity: check every %s, renew %s before the end; want a few seconds and 40s", two.checkInterval(), two.renewBefore())
	}
}
