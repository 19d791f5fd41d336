package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestSelfSignedCertificateIsKeptAcrossRestartsAndTrustedByTheCABundle: the
// first start creates the Secret, a restart reuses it, a change of hosts
// replaces it, and the caBundle verifies the serving certificate for the
// Service's name.
func TestSelfSignedCertificateIsKeptAcrossRestartsAndTrustedByTheCABundle(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(&admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "wc"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "a"}},
	})
	s := &selfSignedOptions{hosts: []string{"was-webhook.was-system.svc"}, webhookConfiguration: "wc"}
	first, err := s.getOrCreate(ctx, client, "was-system", "tls")
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.getOrCreate(ctx, client, "was-system", "tls")
	if err != nil || string(again.Data["tls.crt"]) != string(first.Data["tls.crt"]) {
		t.Fatalf("a restart must reuse the stored certificate (err %v)", err)
	}
	s.hosts = append(s.hosts, "was-webhook.was-system.svc.cluster.local")
	renewed, err := s.getOrCreate(ctx, client, "was-system", "tls")
	if err != nil || string(renewed.Data["tls.crt"]) == string(first.Data["tls.crt"]) {
		t.Fatalf("a certificate without every host must be replaced (err %v)", err)
	}
	if err := s.setCABundle(ctx, client, renewed.Data["ca.crt"]); err != nil {
		t.Fatal(err)
	}
	wc, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "wc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(wc.Webhooks[0].ClientConfig.CABundle) {
		t.Fatal("caBundle holds no certificate")
	}
	pair, err := tls.X509KeyPair(renewed.Data["tls.crt"], renewed.Data["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range s.hosts {
		if _, err := pair.Leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: pool}); err != nil {
			t.Errorf("serving certificate for %s does not verify against the caBundle: %v", host, err)
		}
	}
}
