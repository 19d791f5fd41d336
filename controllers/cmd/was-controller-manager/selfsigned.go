package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/workload-aware/apps-harness/pkg/pki"
)

// selfSignedOptions give the webhook a serving certificate in a cluster
// without cert-manager (deploy/): the certificate and its CA live in a Secret
// that the first webhook to start creates, so restarts and replicas serve the
// same certificate, and the webhook writes the CA into its
// ValidatingWebhookConfiguration's caBundle before it reports ready.
type selfSignedOptions struct {
	secret               string // namespace/name of the Secret
	hosts                []string
	webhookConfiguration string
	certDir              string
	// timeout bounds the wait for the Secret and the webhook configuration.
	timeout time.Duration
}

var selfSigned selfSignedOptions

func (s *selfSignedOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&s.secret, "self-signed-cert-secret", "", "namespace/name of a Secret holding the webhook's self-signed serving certificate (tls.crt, tls.key, ca.crt), created if missing; replaces --tls-cert-file and --tls-private-key-file")
	fs.StringSliceVar(&s.hosts, "self-signed-cert-hosts", nil, "DNS names of the self-signed certificate (the webhook Service's names)")
	fs.StringVar(&s.webhookConfiguration, "self-signed-ca-bundle-webhook-configuration", "", "ValidatingWebhookConfiguration whose caBundle is set to the self-signed CA")
	fs.StringVar(&s.certDir, "self-signed-cert-dir", os.TempDir(), "directory the self-signed certificate is written to for serving")
	s.timeout = 2 * time.Minute
}

// setUp does nothing without --self-signed-cert-secret. Otherwise it gets or
// creates the Secret, points o's TLS files at its certificate and sets the
// caBundle, retrying until both succeed or the timeout passes.
func (s *selfSignedOptions) setUp(ctx context.Context, o *options) error {
	if s.secret == "" {
		return nil
	}
	ns, name, ok := strings.Cut(s.secret, "/")
	if !ok || ns == "" || name == "" || len(s.hosts) == 0 {
		return fmt.Errorf("--self-signed-cert-secret=namespace/name needs --self-signed-cert-hosts")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var secret *corev1.Secret
	err = wait.PollUntilContextTimeout(ctx, 2*time.Second, s.timeout, true, func(ctx context.Context) (bool, error) {
		secret, err = s.getOrCreate(ctx, client, ns, name)
		if err != nil {
			klog.FromContext(ctx).Info("Waiting for the self-signed certificate Secret", "secret", s.secret, "err", err)
		}
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("self-signed certificate in Secret %s: %w", s.secret, err)
	}
	o.tlsCertFile, o.tlsKeyFile = filepath.Join(s.certDir, "tls.crt"), filepath.Join(s.certDir, "tls.key")
	if err := os.WriteFile(o.tlsCertFile, secret.Data[corev1.TLSCertKey], 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(o.tlsKeyFile, secret.Data[corev1.TLSPrivateKeyKey], 0o600); err != nil {
		return err
	}
	if s.webhookConfiguration == "" {
		return nil
	}
	// The configuration may be applied after this pod starts (kustomize
	// orders webhook configurations last): wait for it.
	return wait.PollUntilContextTimeout(ctx, 2*time.Second, s.timeout, true, func(ctx context.Context) (bool, error) {
		err := s.setCABundle(ctx, client, secret.Data["ca.crt"])
		if err != nil {
			klog.FromContext(ctx).Info("Waiting to set the webhook's caBundle", "validatingWebhookConfiguration", s.webhookConfiguration, "err", err)
		}
		return err == nil, nil
	})
}

// getOrCreate returns a Secret whose certificate is for s.hosts and valid for
// at least half its life; otherwise it writes a new one. A lost create race
// is retried by the caller and then reads the winner's Secret.
func (s *selfSignedOptions) getOrCreate(ctx context.Context, client kubernetes.Interface, ns, name string) (*corev1.Secret, error) {
	api := client.CoreV1().Secrets(ns)
	existing, err := api.Get(ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	found := err == nil
	if found && s.usable(existing) {
		return existing, nil
	}
	data, err := s.generate()
	if err != nil {
		return nil, err
	}
	if !found {
		return api.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Type:       corev1.SecretTypeTLS, Data: data,
		}, metav1.CreateOptions{})
	}
	existing.Data = data
	return api.Update(ctx, existing, metav1.UpdateOptions{})
}

func (s *selfSignedOptions) usable(secret *corev1.Secret) bool {
	if _, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey]); err != nil {
		return false
	}
	block, _ := pem.Decode(secret.Data[corev1.TLSCertKey])
	if block == nil || len(secret.Data["ca.crt"]) == 0 {
		return false
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return false
	}
	for _, h := range s.hosts {
		if !slices.Contains(cert.DNSNames, h) {
			return false
		}
	}
	return time.Until(cert.NotAfter) > pki.Validity/2
}

func (s *selfSignedOptions) generate() (map[string][]byte, error) {
	ca, err := pki.NewCA("was-webhook-ca")
	if err != nil {
		return nil, err
	}
	kp, err := ca.Issue(pki.CertRequest{CommonName: s.hosts[0], DNSNames: s.hosts, Server: true})
	if err != nil {
		return nil, err
	}
	key, err := pki.KeyPEM(kp.Key)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		corev1.TLSCertKey: pki.CertPEM(kp.Cert), corev1.TLSPrivateKeyKey: key, "ca.crt": pki.CertPEM(ca.Cert),
	}, nil
}

func (s *selfSignedOptions) setCABundle(ctx context.Context, client kubernetes.Interface, ca []byte) error {
	api := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	wc, err := api.Get(ctx, s.webhookConfiguration, metav1.GetOptions{})
	if err != nil {
		return err
	}
	changed := false
	for i := range wc.Webhooks {
		if string(wc.Webhooks[i].ClientConfig.CABundle) != string(ca) {
			wc.Webhooks[i].ClientConfig.CABundle, changed = ca, true
		}
	}
	if !changed {
		return nil
	}
	_, err = api.Update(ctx, wc, metav1.UpdateOptions{})
	return err
}
