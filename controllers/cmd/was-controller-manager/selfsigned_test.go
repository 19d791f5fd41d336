package main

// The self-signed certificate's tests run against a real kube-apiserver and
// etcd (internal/apitest): a fake clientset accepts writes the server
// rejects (a Secret's type changed, an immutable Secret updated), which once
// hid a crash loop. Interleavings with another writer are staged on the
// real server too, by a transport hook (stageBefore) that makes the other
// write just before this client's request, so conflicts and failed
// preconditions are the server's own; no fake clientset is left.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/deploy"
	"github.com/workload-aware/apps-harness/internal/apitest"
	"github.com/workload-aware/apps-harness/pkg/pki"
)

func TestMain(m *testing.M) { os.Exit(apitest.Run(m)) }

const testSecret = "was-webhook-tls"

var testHosts = []string{"was-webhook.was-system.svc", "127.0.0.1"}

// testEnv is one test's namespace (for the Secret) and webhook
// configuration on the shared server, so tests run in parallel.
type testEnv struct {
	api                *apitest.Server
	namespace, webhook string
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	api := apitest.Start(t)
	ns := api.Namespace(t)
	e := &testEnv{api: api, namespace: ns, webhook: ns}
	if _, err := api.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(context.Background(), testWebhookConfiguration(e.webhook), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// testWebhookConfiguration has two webhooks (each gets the caBundle) and
// no rules: the server calls it for nothing, only its caBundle matters.
func testWebhookConfiguration(name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	hook := func(name string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name: name, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1/validate")},
		}
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{hook("a.was.test"), hook("b.was.test")},
	}
}

// newCertificate is a replica's certificate, talking to the server as client
// (the admin when nil).
func (e *testEnv) newCertificate(t *testing.T, client kubernetes.Interface, validity time.Duration) (*selfSignedCertificate, *record.FakeRecorder) {
	t.Helper()
	if client == nil {
		client = e.api.Client
	}
	recorder := record.NewFakeRecorder(10)
	opts := selfSignedOptions{secret: e.namespace + "/" + testSecret, hosts: testHosts, webhookConfiguration: e.webhook, validity: validity, timeout: time.Second}
	if err := opts.validate(); err != nil {
		t.Fatal(err)
	}
	return newSelfSignedCertificate(opts, client, recorder), recorder
}

func (e *testEnv) secret(t *testing.T) *corev1.Secret {
	t.Helper()
	s, err := e.api.Client.CoreV1().Secrets(e.namespace).Get(context.Background(), testSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// caBundle is the caBundle the server holds, the same in every webhook.
func (e *testEnv) caBundle(t *testing.T) []byte {
	t.Helper()
	wc, err := e.api.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), e.webhook, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wc.Webhooks[1:] {
		if string(w.ClientConfig.CABundle) != string(wc.Webhooks[0].ClientConfig.CABundle) {
			t.Fatalf("webhook %s has another caBundle than %s", w.Name, wc.Webhooks[0].Name)
		}
	}
	return wc.Webhooks[0].ClientConfig.CABundle
}

// setCABundle writes bundle into every webhook, as an operator would.
func (e *testEnv) setCABundle(t *testing.T, bundle []byte) {
	t.Helper()
	api := e.api.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	wc, err := api.Get(context.Background(), e.webhook, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range wc.Webhooks {
		wc.Webhooks[i].ClientConfig.CABundle = bundle
	}
	if _, err := api.Update(context.Background(), wc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// writeSecretData rewrites the stored Secret (a test's way to age it).
func (e *testEnv) writeSecretData(t *testing.T, mutate func(*corev1.Secret)) {
	t.Helper()
	s := e.secret(t)
	mutate(s)
	if _, err := e.api.Client.CoreV1().Secrets(e.namespace).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// issueInto puts a serving certificate of ca with the given validity into the stored Secret.
func (e *testEnv) issueInto(t *testing.T, ca *pki.CA, validity time.Duration) {
	t.Helper()
	cert, key := issueLeaf(t, ca, validity)
	e.writeSecretData(t, func(s *corev1.Secret) { s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey] = cert, key })
}

// ageCA replaces the stored CA by one that expires in 90 minutes (less than
// two lifetimes of a 1h certificate, so the next sync rotates it), with a
// leaf of it; it returns that CA.
func (e *testEnv) ageCA(t *testing.T) *pki.CA {
	t.Helper()
	old, err := pki.NewCAValidFor("was-webhook-ca", 90*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	oldKey, _ := pki.KeyPEM(old.Key)
	cert, key := issueLeaf(t, old, time.Hour)
	e.writeSecretData(t, func(s *corev1.Secret) {
		s.Data[caCertKey], s.Data[caKeyKey] = pki.CertPEM(old.Cert), oldKey
		s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey] = cert, key
	})
	return old
}

func issueLeaf(t *testing.T, ca *pki.CA, validity time.Duration) (certPEM, keyPEM []byte) {
	t.Helper()
	kp, err := ca.Issue(pki.CertRequest{CommonName: testHosts[0], DNSNames: testHosts[:1], IPs: []net.IP{net.ParseIP(testHosts[1])}, Server: true, Validity: validity})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := pki.KeyPEM(kp.Key)
	return pki.CertPEM(kp.Cert), key
}

// expiredCA is a CA certificate whose end has passed (pki makes none).
func expiredCA(t *testing.T) *x509.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "expired"},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: time.Now().Add(-time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return cert
}

func storedCA(t *testing.T, s *corev1.Secret) *pki.CA {
	t.Helper()
	ca, err := pki.ParseCA(s.Data[caCertKey], s.Data[caKeyKey])
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func storedLeaf(t *testing.T, s *corev1.Secret) *x509.Certificate {
	t.Helper()
	pair, err := tls.X509KeyPair(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		t.Fatal(err)
	}
	return pair.Leaf
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

func parseBundle(t *testing.T, bundle []byte) []*x509.Certificate {
	t.Helper()
	certs, err := certutil.ParseCertsPEM(bundle)
	if err != nil {
		t.Fatal(err)
	}
	return certs
}

func bundleHolds(certs []*x509.Certificate, want *x509.Certificate) bool {
	for _, c := range certs {
		if c.Equal(want) {
			return true
		}
	}
	return false
}

func verifies(leaf *x509.Certificate, bundle []byte) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	for _, host := range testHosts {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			return err
		}
	}
	return nil
}

func expectTrusted(t *testing.T, leaf *x509.Certificate, bundle []byte) {
	t.Helper()
	if err := verifies(leaf, bundle); err != nil {
		t.Errorf("serving certificate (serial %s) does not verify against the caBundle: %v", leaf.SerialNumber, err)
	}
}

func expectEvent(t *testing.T, recorder *record.FakeRecorder, want string) string {
	t.Helper()
	select {
	case ev := <-recorder.Events:
		if !strings.HasPrefix(ev, want) {
			t.Errorf("event %q, want one starting %q", ev, want)
		}
		return ev
	default:
		t.Errorf("no event, want %q", want)
		return ""
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

// stageBefore returns a client on cfg whose requests of method to a path
// ending in suffix first run before (once) and are counted: another
// writer's change lands between this client's read and its write, and the
// real server judges the write (a conflict, a failed precondition).
func stageBefore(t *testing.T, cfg *rest.Config, method, suffix string, before func()) (kubernetes.Interface, *atomic.Int32) {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	var once sync.Once
	count := &atomic.Int32{}
	cfg.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == method && strings.HasSuffix(req.URL.Path, suffix) {
				count.Add(1)
				once.Do(before)
			}
			return next.RoundTrip(req)
		})
	})
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client, count
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestSelfSignedCertificateIsCreatedKeptAndTrustedByTheCABundle: the first
// sync creates a marked kubernetes.io/tls Secret and sets the caBundle;
// later syncs and other replicas serve the same certificate and write nothing.
func TestSelfSignedCertificateIsCreatedKeptAndTrustedByTheCABundle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newTestEnv(t)
	first, recorder := e.newCertificate(t, nil, time.Hour)
	if err := first.sync(ctx); err != nil {
		t.Fatal(err)
	}
	secret := e.secret(t)
	if secret.Labels[managedByLabel] != managedByValue || secret.Type != corev1.SecretTypeTLS {
		t.Errorf("created Secret labels %v type %s: want our marking and kubernetes.io/tls", secret.Labels, secret.Type)
	}
	leaf := served(t, first)
	expectTrusted(t, leaf, e.caBundle(t))
	if left := time.Until(leaf.NotAfter); left > time.Hour || left < 59*time.Minute {
		t.Errorf("certificate valid for %s more, want --self-signed-cert-validity=1h", left)
	}
	if left := time.Until(storedCA(t, secret).Cert.NotAfter); left < 9*time.Hour {
		t.Errorf("CA valid for %s more, want %d times the certificate's validity", left, caValidityFactor)
	}
	expectNoEvent(t, recorder)
	wc, _ := e.api.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, e.webhook, metav1.GetOptions{})

	replica, _ := e.newCertificate(t, nil, time.Hour)
	if err := replica.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if !served(t, replica).Equal(leaf) || !served(t, first).Equal(leaf) {
		t.Error("a replica or a later sync serves another certificate than the stored one")
	}
	if got := e.secret(t).ResourceVersion; got != secret.ResourceVersion {
		t.Errorf("the Secret was rewritten (resourceVersion %s -> %s) though its certificate is fresh", secret.ResourceVersion, got)
	}
	if again, _ := e.api.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, e.webhook, metav1.GetOptions{}); again.ResourceVersion != wc.ResourceVersion {
		t.Errorf("the webhook configuration was rewritten (resourceVersion %s -> %s) though its caBundle held the CA", wc.ResourceVersion, again.ResourceVersion)
	}
}

// TestSelfSignedCertificateIsRenewedFromTheSameCA: a certificate with less
// than a third of its life left is renewed from the stored CA, so the
// caBundle does not change, and the new one is served at the next handshake.
func TestSelfSignedCertificateIsRenewedFromTheSameCA(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newTestEnv(t)
	c, recorder := e.newCertificate(t, nil, time.Hour)
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	bundle := e.caBundle(t)
	ca := storedCA(t, e.secret(t))
	e.issueInto(t, ca, 15*time.Minute) // a quarter of its life left
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
	if got := e.caBundle(t); string(got) != string(bundle) {
		t.Error("the caBundle changed on a renewal: the CA must be reused")
	}
	if !storedCA(t, e.secret(t)).Cert.Equal(ca.Cert) {
		t.Error("the stored CA changed on a renewal")
	}
	expectTrusted(t, leaf, bundle)
}

// TestUntrustedSecretIsReplacedWithAnEvent: a Secret without our marking,
// or whose certificate its CA did not sign, is replaced whole, with one
// Warning event, and its CA never reaches the caBundle. One the server will
// not let us update (another type than kubernetes.io/tls, or immutable) is
// deleted, that very object (a UID precondition), and created again; the
// next sync keeps the new one (no loop of replacements).
func TestUntrustedSecretIsReplacedWithAnEvent(t *testing.T) {
	t.Parallel()
	planted, _ := pki.NewCA("someone-else")
	cert, key := issueLeaf(t, planted, 0)
	caKey, _ := pki.KeyPEM(planted.Key)
	plantedData := map[string][]byte{
		corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key, caCertKey: pki.CertPEM(planted.Cert), caKeyKey: caKey,
	}
	foreign, _ := pki.NewCA("foreign")
	ours := map[string]string{managedByLabel: managedByValue}
	for _, tc := range []struct {
		name      string
		typ       corev1.SecretType
		immutable bool
		labels    map[string]string
		mutate    func(map[string][]byte)
		reason    string
		recreated bool // by delete and create, not updated in place
	}{
		{name: "Opaque without our marking", typ: corev1.SecretTypeOpaque, reason: "lacks the label", recreated: true},
		{name: "kubernetes.io/tls without our marking", typ: corev1.SecretTypeTLS, reason: "lacks the label"},
		{name: "immutable kubernetes.io/tls without our marking", typ: corev1.SecretTypeTLS, immutable: true, reason: "lacks the label", recreated: true},
		{name: "certificate not issued by its CA", typ: corev1.SecretTypeTLS, labels: ours, reason: "not issued by its CA",
			mutate: func(d map[string][]byte) {
				fkp, _ := foreign.Issue(pki.CertRequest{CommonName: testHosts[0], DNSNames: testHosts, Server: true})
				fkey, _ := pki.KeyPEM(fkp.Key)
				d[corev1.TLSCertKey], d[corev1.TLSPrivateKeyKey] = pki.CertPEM(fkp.Cert), fkey
			}},
		{name: "Opaque with a CA key of another CA", typ: corev1.SecretTypeOpaque, labels: ours, reason: "CA is unusable", recreated: true,
			mutate: func(d map[string][]byte) { d[caKeyKey], _ = pki.KeyPEM(foreign.Key) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newTestEnv(t)
			data := map[string][]byte{}
			for k, v := range plantedData {
				data[k] = v
			}
			if tc.mutate != nil {
				tc.mutate(data)
			}
			plantedSecret, err := e.api.Client.CoreV1().Secrets(e.namespace).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: testSecret, Namespace: e.namespace, Labels: tc.labels},
				Type:       tc.typ, Immutable: ptr.To(tc.immutable), Data: data,
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c, recorder := e.newCertificate(t, nil, time.Hour)
			if err := c.sync(ctx); err != nil {
				t.Fatal(err)
			}
			if ev := expectEvent(t, recorder, "Warning "+reasonCertificateReplaced); !strings.Contains(ev, tc.reason) {
				t.Errorf("event %q does not say %q", ev, tc.reason)
			}
			secret := e.secret(t)
			if secret.Labels[managedByLabel] != managedByValue || secret.Type != corev1.SecretTypeTLS {
				t.Errorf("the replaced Secret has labels %v, type %s: want our marking and kubernetes.io/tls", secret.Labels, secret.Type)
			}
			if recreated := secret.UID != plantedSecret.UID; recreated != tc.recreated {
				t.Errorf("Secret recreated %t (UID %s -> %s), want %t", recreated, plantedSecret.UID, secret.UID, tc.recreated)
			}
			bundle := e.caBundle(t)
			for _, cert := range parseBundle(t, bundle) {
				if cert.Equal(planted.Cert) || cert.Equal(foreign.Cert) {
					t.Errorf("the caBundle trusts the planted CA %s", cert.Subject.CommonName)
				}
			}
			expectTrusted(t, served(t, c), bundle)

			// Once replaced, it is kept: no second replacement, no write.
			if err := c.sync(ctx); err != nil {
				t.Fatal(err)
			}
			expectNoEvent(t, recorder)
			if again := e.secret(t); again.ResourceVersion != secret.ResourceVersion {
				t.Errorf("the replaced Secret was written again (resourceVersion %s -> %s)", secret.ResourceVersion, again.ResourceVersion)
			}
		})
	}
}

// TestReplacingAPlantedSecretDeletesOnlyTheSecretItRead: two replicas find
// the same planted Opaque Secret; the other one replaces it first (between
// this replica's read and its delete). This replica's delete carries the
// planted Secret's UID, so the server refuses it (409), and the retry reads
// and serves the other replica's Secret instead of deleting it.
func TestReplacingAPlantedSecretDeletesOnlyTheSecretItRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newTestEnv(t)
	planted, _ := pki.NewCA("someone-else")
	cert, key := issueLeaf(t, planted, 0)
	if _, err := e.api.Client.CoreV1().Secrets(e.namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: testSecret, Namespace: e.namespace},
		Data:       map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other, otherEvents := e.newCertificate(t, nil, time.Hour)
	var otherErr error
	client, deletes := stageBefore(t, e.api.Config, http.MethodDelete, "/secrets/"+testSecret, func() { otherErr = other.sync(ctx) })
	c, recorder := e.newCertificate(t, client, time.Hour)
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if otherErr != nil {
		t.Fatal(otherErr)
	}
	if deletes.Load() != 1 {
		t.Errorf("%d deletes, want the one the server refused", deletes.Load())
	}
	expectEvent(t, otherEvents, "Warning "+reasonCertificateReplaced)
	expectNoEvent(t, recorder)
	if stored := storedLeaf(t, e.secret(t)); !served(t, c).Equal(stored) || !served(t, other).Equal(stored) {
		t.Error("the replicas do not both serve the Secret the first one made")
	}
}

// TestCARotationKeepsTheOldCAInTheBundle: a CA near its end is replaced by
// a new one, and the bundle holds both until the old one expires, so a
// replica still serving a certificate of the old CA keeps being trusted.
func TestCARotationKeepsTheOldCAInTheBundle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newTestEnv(t)
	c, recorder := e.newCertificate(t, nil, time.Hour)
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	first := storedCA(t, e.secret(t))
	old := e.ageCA(t)
	oldLeaf := storedLeaf(t, e.secret(t))

	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, recorder, "Normal "+reasonCARotated)
	secret := e.secret(t)
	current := storedCA(t, secret)
	if current.Cert.Equal(old.Cert) {
		t.Fatal("the CA was not rotated")
	}
	if stored := parseBundle(t, secret.Data[caCertKey]); len(stored) != 2 || !stored[0].Equal(current.Cert) || !stored[1].Equal(old.Cert) {
		t.Errorf("the Secret's bundle holds %d certificates, want the new CA then the old one", len(stored))
	}
	bundle := e.caBundle(t)
	// Only added to: the first CA, unexpired, stays too.
	for name, ca := range map[string]*x509.Certificate{"new": current.Cert, "old": old.Cert, "first": first.Cert} {
		if !bundleHolds(parseBundle(t, bundle), ca) {
			t.Errorf("the caBundle lacks the %s CA", name)
		}
	}
	expectTrusted(t, served(t, c), bundle)
	expectTrusted(t, oldLeaf, bundle)
}

// TestCABundleIsOnlyAddedTo: the caBundle keeps every unexpired CA someone
// else put there (an operator, or a replica that rotated the CA after the
// Secret we read) and loses only expired ones, when ours is added.
func TestCABundleIsOnlyAddedTo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newTestEnv(t)
	operators, _ := pki.NewCA("operator")
	expired := expiredCA(t)
	e.setCABundle(t, append(pki.CertPEM(operators.Cert), pki.CertPEM(expired)...))
	c, _ := e.newCertificate(t, nil, time.Hour)
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	ours := storedCA(t, e.secret(t)).Cert
	certs := parseBundle(t, e.caBundle(t))
	if len(certs) != 2 || !certs[0].Equal(operators.Cert) || !certs[1].Equal(ours) {
		t.Errorf("caBundle holds %d certificates, want the operator's CA then ours (and not the expired one)", len(certs))
	}

	// A replica that read an earlier Secret (whose bundle lacks a CA
	// published since) leaves that CA in place.
	newer, _ := pki.NewCA("newer")
	e.setCABundle(t, append(e.caBundle(t), pki.CertPEM(newer.Cert)...))
	before := e.caBundle(t)
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.caBundle(t); string(got) != string(before) {
		t.Errorf("a sync with nothing to add rewrote the caBundle:\n%s\nwant\n%s", got, before)
	}
}

// TestCABundleUpdateRetriesOnAConflict: the caBundle changes between our
// read and our write; the server refuses our write (its resourceVersion
// is stale), and the retry adds our CA to the newer bundle, not over it.
func TestCABundleUpdateRetriesOnAConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newTestEnv(t)
	meanwhile, _ := pki.NewCA("meanwhile")
	client, updates := stageBefore(t, e.api.Config, http.MethodPut, "/validatingwebhookconfigurations/"+e.webhook, func() {
		e.setCABundle(t, pki.CertPEM(meanwhile.Cert))
	})
	c, _ := e.newCertificate(t, client, time.Hour)
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if updates.Load() != 2 {
		t.Errorf("%d updates of the webhook configuration, want 2 (a conflict, then its retry)", updates.Load())
	}
	certs := parseBundle(t, e.caBundle(t))
	if !bundleHolds(certs, meanwhile.Cert) || !bundleHolds(certs, storedCA(t, e.secret(t)).Cert) {
		t.Errorf("caBundle holds %d certificates, want the one written meanwhile and ours", len(certs))
	}
}

// webhookAccount is the webhook's identity in deploy/, impersonated.
const webhookAccount = "system:serviceaccount:was-system:was-webhook"

// installDeployed creates deploy/'s objects that bound the webhook's
// certificate work (its namespace, Role, ClusterRole, their bindings, the
// ValidatingAdmissionPolicy that lets it change only caBundle, and the
// webhook registration itself), as rendered by kustomize, and returns the
// admin's way to remove and restore the ClusterRoleBinding that lets the
// webhook update the registration.
func installDeployed(t *testing.T, api *apitest.Server) (unbind, rebind func()) {
	t.Helper()
	objects, err := deploy.Render()
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(api.Config)
	resources := map[string]schema.GroupVersionResource{
		"Namespace":                        {Version: "v1", Resource: "namespaces"},
		"Role":                             {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
		"RoleBinding":                      {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
		"ClusterRole":                      {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		"ClusterRoleBinding":               {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
		"ValidatingAdmissionPolicy":        {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
		"ValidatingAdmissionPolicyBinding": {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"},
		"ValidatingWebhookConfiguration":   {Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
	}
	wanted := map[string]bool{
		"Namespace/was-system": true, "Role/was:webhook-certificate": true, "RoleBinding/was:webhook-certificate": true,
		"ClusterRole/was:webhook-ca-bundle": true, "ClusterRoleBinding/was:webhook-ca-bundle": true,
		"ValidatingAdmissionPolicy/was-webhook-ca-bundle-only": true, "ValidatingAdmissionPolicyBinding/was-webhook-ca-bundle-only": true,
		"ValidatingWebhookConfiguration/was-harness-apps-admission": true,
	}
	var binding *unstructured.Unstructured
	for _, o := range objects {
		id := o.GetKind() + "/" + o.GetName()
		if !wanted[id] {
			continue
		}
		delete(wanted, id)
		if o.GetKind() == "ClusterRoleBinding" {
			binding = o
		}
		// Already there on a second run in this binary (go test -count=2).
		if _, err := dyn.Resource(resources[o.GetKind()]).Namespace(o.GetNamespace()).Create(context.Background(), o, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %s: %v", id, err)
		}
	}
	if len(wanted) > 0 {
		t.Fatalf("deploy/ no longer renders %v", wanted)
	}
	bindings := dyn.Resource(resources["ClusterRoleBinding"])
	unbind = func() {
		if err := bindings.Delete(context.Background(), binding.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rebind = func() {
		if _, err := bindings.Create(context.Background(), binding, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return unbind, rebind
}

// eventually polls check (for the server's caches: RBAC, admission policies).
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err = check(); err == nil {
			return
		}
	}
	t.Fatalf("%s: %v", what, err)
}

// TestCARotationPublishesTheNewCABeforeServingItsLeaf runs as deploy/ runs
// the webhook: as its service account, under its RBAC and under the policy
// that lets it change only the registration's caBundle. A rotated CA's
// leaf is served only once the caBundle the server holds has its CA: while
// the registration cannot be updated, the rotating pod keeps serving the
// old leaf and a starting pod serves nothing.
func TestCARotationPublishesTheNewCABeforeServingItsLeaf(t *testing.T) {
	ctx := context.Background()
	api := apitest.Start(t)
	unbind, rebind := installDeployed(t, api)
	e := &testEnv{api: api, namespace: "was-system", webhook: "was-harness-apps-admission"}
	asWebhook := rest.CopyConfig(api.Config)
	asWebhook.Impersonate = rest.ImpersonationConfig{UserName: webhookAccount, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:was-system", "system:authenticated"}}
	client := kubernetes.NewForConfigOrDie(asWebhook)

	// The policy is in force: the account may not change anything but caBundle.
	eventually(t, "the webhook's account may change a webhook's timeoutSeconds", func() error {
		wc, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, e.webhook, metav1.GetOptions{})
		if err != nil {
			return err
		}
		wc.Webhooks[0].TimeoutSeconds = ptr.To(*wc.Webhooks[0].TimeoutSeconds + 1)
		_, err = client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, wc, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), "may change only webhooks[*].clientConfig.caBundle") {
			return fmt.Errorf("update not denied by the policy: %v", err)
		}
		return nil
	})

	c, recorder := e.newCertificate(t, client, time.Hour)
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	first := served(t, c)
	expectTrusted(t, first, e.caBundle(t))

	unbind()
	eventually(t, "the webhook's account may still update its registration", func() error {
		if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, e.webhook, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			return fmt.Errorf("get: %v, want forbidden", err)
		}
		return nil
	})
	old := e.ageCA(t)
	oldLeaf := served(t, c) // not yet reloaded: still the first leaf
	c.onRenewed = func() {
		// The moment a new leaf is first served: the server's caBundle must already trust it.
		if err := verifies(served(t, c), e.caBundle(t)); err != nil {
			t.Errorf("a renewed leaf was served before the caBundle trusted it: %v", err)
		}
	}
	if err := c.sync(ctx); err == nil {
		t.Fatal("sync succeeded though the caBundle could not be published")
	}
	expectEvent(t, recorder, "Normal "+reasonCARotated)
	rotated := storedLeaf(t, e.secret(t))
	if rotated.Equal(oldLeaf) || storedCA(t, e.secret(t)).Cert.Equal(old.Cert) {
		t.Fatal("the CA was not rotated in the Secret")
	}
	if !served(t, c).Equal(oldLeaf) {
		t.Error("the rotating pod serves the new CA's leaf before the caBundle holds that CA")
	}
	starting, _ := e.newCertificate(t, client, time.Hour)
	if err := starting.sync(ctx); err == nil {
		t.Error("a starting pod's sync succeeded though the caBundle could not be published")
	}
	if _, err := starting.GetCertificate(nil); err == nil {
		t.Error("a starting pod serves the new CA's leaf before the caBundle holds that CA")
	}

	rebind()
	eventually(t, "sync once the webhook's account may update its registration again", func() error { return c.sync(ctx) })
	if !served(t, c).Equal(rotated) {
		t.Error("the rotating pod does not serve the rotated leaf once the caBundle is published")
	}
	bundle := e.caBundle(t)
	expectTrusted(t, rotated, bundle)
	expectTrusted(t, first, bundle)
	if err := starting.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if !served(t, starting).Equal(rotated) {
		t.Error("the starting pod does not serve the rotated leaf")
	}
}

func TestReadinessFailsNearExpiry(t *testing.T) {
	// Only the served certificate matters: no API server.
	c := newSelfSignedCertificate(selfSignedOptions{secret: "ns/name", hosts: testHosts, validity: time.Hour}, nil, nil)
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
	t.Parallel()
	ctx := context.Background()
	e := newTestEnv(t)
	c, _ := e.newCertificate(t, nil, time.Hour)
	// The server as startWebhook builds it (httptest would add a certificate of its own).
	srv := newWebhookServer("127.0.0.1:0", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLSConfig = webhookTLSConfig(c)
	c.onRenewed = func() { dropIdleConnections(srv) }
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	addr := serveTLS(t, srv)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.caBundle(t))
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
	e.issueInto(t, storedCA(t, e.secret(t)), 10*time.Minute)
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
