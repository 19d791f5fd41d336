package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/workload-aware/apps-harness/pkg/pki"
)

// The Secret's keys next to tls.crt and tls.key: the CA bundle (the current
// CA first, then earlier CAs that have not expired yet) and the current CA's
// key, kept so every renewal and every replica issues from the same CA and
// the caBundle stays valid.
const (
	caCertKey = "ca.crt"
	caKeyKey  = "ca.key"
)

// Our owner marking on the Secret: a Secret without it was not made by this
// program and is replaced, never trusted.
const (
	managedByLabel = "app.kubernetes.io/managed-by"
	managedByValue = "was-controller-manager"
)

// Event reasons on the Secret.
const (
	reasonCertificateReplaced = "CertificateReplaced"
	reasonCertificateRenewed  = "CertificateRenewed"
	reasonCARotated           = "CARotated"
)

// selfSignedOptions give the webhook a serving certificate in a cluster
// without cert-manager (deploy/). The certificate, its CA and the CA's key
// live in a Secret that the first webhook to start creates; every replica
// serves the Secret's certificate, renews it from the same CA well before it
// expires (whoever comes first writes, the others read), and keeps the CA in
// its ValidatingWebhookConfiguration's caBundle.
type selfSignedOptions struct {
	secret               string // namespace/name of the Secret
	hosts                []string
	webhookConfiguration string
	// validity is the serving certificate's lifetime; the CA lives
	// caValidityFactor times longer.
	validity time.Duration
	// timeout bounds the wait for the Secret and the webhook configuration at start.
	timeout time.Duration
}

// caValidityFactor: the CA outlives many serving certificates, so the
// caBundle changes rarely (and then with the old CA kept in it).
const caValidityFactor = 10

var selfSigned selfSignedOptions

func (s *selfSignedOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&s.secret, "self-signed-cert-secret", "", "namespace/name of a Secret holding the webhook's self-signed serving certificate and its CA (tls.crt, tls.key, ca.crt, ca.key), created if missing and renewed while running; replaces --tls-cert-file and --tls-private-key-file")
	fs.StringSliceVar(&s.hosts, "self-signed-cert-hosts", nil, "DNS names or IP addresses of the self-signed certificate (the webhook Service's names)")
	fs.StringVar(&s.webhookConfiguration, "self-signed-ca-bundle-webhook-configuration", "", "ValidatingWebhookConfiguration whose caBundle is kept set to the self-signed CA")
	fs.DurationVar(&s.validity, "self-signed-cert-validity", pki.Validity, fmt.Sprintf("lifetime of the self-signed serving certificate; it is renewed when a third of it is left, and the CA lives %d times longer", caValidityFactor))
	s.timeout = 2 * time.Minute
}

func (s *selfSignedOptions) enabled() bool { return s.secret != "" }

// renewBefore is how much life a serving certificate has left when it is
// renewed; readinessMargin is how much it has left when the pod stops being
// ready, because renewing has failed for a long time.
func (s *selfSignedOptions) renewBefore() time.Duration     { return s.validity / 3 }
func (s *selfSignedOptions) readinessMargin() time.Duration { return s.validity / 10 }
func (s *selfSignedOptions) caValidity() time.Duration      { return caValidityFactor * s.validity }

// caRenewBefore: a CA is rotated while it can still outlive two serving
// certificates, so no certificate is ever issued past its CA's end.
func (s *selfSignedOptions) caRenewBefore() time.Duration { return 2 * s.validity }

// checkInterval is how often the running webhook looks at the Secret.
func (s *selfSignedOptions) checkInterval() time.Duration {
	return min(max(s.validity/24, time.Second), time.Minute)
}

func (s *selfSignedOptions) validate() error {
	ns, name, ok := strings.Cut(s.secret, "/")
	if !ok || ns == "" || name == "" {
		return fmt.Errorf("--self-signed-cert-secret=%q: want namespace/name", s.secret)
	}
	if len(s.hosts) == 0 {
		return fmt.Errorf("--self-signed-cert-secret needs --self-signed-cert-hosts")
	}
	if s.validity < 30*time.Second {
		return fmt.Errorf("--self-signed-cert-validity=%s: at least 30s", s.validity)
	}
	return nil
}

// selfSignedCertificate keeps the Secret's certificate fresh and serves it.
type selfSignedCertificate struct {
	opts            selfSignedOptions
	namespace, name string
	client          kubernetes.Interface
	recorder        record.EventRecorder
	serving         atomic.Pointer[tls.Certificate]
	// onRenewed runs after a renewed certificate is first served (set
	// before start): the webhook server drops its idle connections, so
	// clients handshake again and verify the new certificate now rather
	// than whenever their kept-alive connection happens to close.
	onRenewed func()
}

func newSelfSignedCertificate(opts selfSignedOptions, client kubernetes.Interface, recorder record.EventRecorder) *selfSignedCertificate {
	ns, name, _ := strings.Cut(opts.secret, "/")
	return &selfSignedCertificate{opts: opts, namespace: ns, name: name, client: client, recorder: recorder}
}

// start syncs once, waiting up to the timeout for the Secret to be writable
// and the webhook configuration to exist (kustomize applies webhook
// configurations last), then keeps syncing in the background until ctx ends.
func (c *selfSignedCertificate) start(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, c.opts.timeout, true, func(ctx context.Context) (bool, error) {
		err := c.sync(ctx)
		if err != nil {
			logger.Info("Waiting for the self-signed certificate", "secret", c.opts.secret, "validatingWebhookConfiguration", c.opts.webhookConfiguration, "err", err)
		}
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("self-signed certificate in Secret %s: %w", c.opts.secret, err)
	}
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := c.sync(ctx); err != nil {
			// The current certificate keeps being served; readiness fails
			// once it is close to its end.
			logger.Error(err, "Syncing the self-signed certificate", "secret", c.opts.secret)
		}
	}, c.opts.checkInterval())
	return nil
}

// sync makes the Secret hold a certificate we trust and that is far from its
// end, adds its CA bundle to the webhook configuration's, and only then
// serves it: a leaf of a new CA is never served before the API server can
// trust it, in this pod or in any other (each publishes before it serves).
func (c *selfSignedCertificate) sync(ctx context.Context) error {
	secret, err := c.ensureSecret(ctx)
	if err != nil {
		return err
	}
	if c.opts.webhookConfiguration != "" {
		if err := c.publishCABundle(ctx, secret.Data[caCertKey]); err != nil {
			// The previous leaf stays served: its CA is in the bundle.
			return fmt.Errorf("publishing the CA bundle of Secret %s: %w", c.opts.secret, err)
		}
	}
	return c.serve(ctx, secret)
}

// GetCertificate is the TLS server's certificate, looked up on every
// handshake, so a renewal takes effect without a restart.
func (c *selfSignedCertificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	cert := c.serving.Load()
	if cert == nil {
		return nil, errors.New("no serving certificate yet")
	}
	return cert, nil
}

// Check fails when the served certificate is close to its end: renewing has
// failed for most of its life, and the pod should stop taking requests
// before the API server rejects its certificate.
func (c *selfSignedCertificate) Check() error {
	cert := c.serving.Load()
	if cert == nil {
		return errors.New("no serving certificate yet")
	}
	if left := cert.Leaf.NotAfter.Sub(time.Now()); left < c.opts.readinessMargin() {
		return fmt.Errorf("the serving certificate expires in %s (at %s) and could not be renewed", left.Round(time.Second), cert.Leaf.NotAfter.Format(time.RFC3339))
	}
	return nil
}

func (c *selfSignedCertificate) serve(ctx context.Context, secret *corev1.Secret) error {
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return fmt.Errorf("loading the certificate of Secret %s: %w", c.opts.secret, err)
	}
	old := c.serving.Load()
	if old != nil && old.Leaf.Equal(pair.Leaf) {
		return nil
	}
	klog.FromContext(ctx).Info("Serving the webhook certificate", "secret", c.opts.secret, "serial", pair.Leaf.SerialNumber, "notAfter", pair.Leaf.NotAfter)
	c.serving.Store(&pair)
	if old != nil && c.onRenewed != nil {
		c.onRenewed()
	}
	return nil
}

// action is what ensureSecret does with the Secret it found.
type action int

const (
	keep action = iota
	renewLeaf
	rotateCA
	replace
)

// verdict is inspect's finding: what to do, why, and the CA to issue from.
type verdict struct {
	action action
	reason string
	ca     *pki.CA
	bundle []*x509.Certificate
}

// inspect decides whether the Secret can be served as it is. Only a Secret
// with our marking whose serving certificate was signed by its own CA is
// trusted; anything else is replaced whole, so a Secret planted by someone
// else never puts their CA into the caBundle.
func (c *selfSignedCertificate) inspect(secret *corev1.Secret) verdict {
	if secret.Labels[managedByLabel] != managedByValue {
		return verdict{action: replace, reason: fmt.Sprintf("it lacks the label %s=%s, so was-controller-manager did not make it", managedByLabel, managedByValue)}
	}
	ca, err := pki.ParseCA(secret.Data[caCertKey], secret.Data[caKeyKey])
	if err != nil {
		return verdict{action: replace, reason: fmt.Sprintf("its CA is unusable: %v", err)}
	}
	bundle, err := certutil.ParseCertsPEM(secret.Data[caCertKey])
	if err != nil {
		return verdict{action: replace, reason: fmt.Sprintf("its CA bundle is unusable: %v", err)}
	}
	pair, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return verdict{action: replace, reason: fmt.Sprintf("its serving certificate is unusable: %v", err)}
	}
	leaf := pair.Leaf
	if err := leaf.CheckSignatureFrom(ca.Cert); err != nil {
		return verdict{action: replace, reason: fmt.Sprintf("its serving certificate was not issued by its CA: %v", err)}
	}
	now := time.Now()
	found := verdict{ca: ca, bundle: bundle}
	switch {
	case ca.Cert.NotAfter.Sub(now) < c.opts.caRenewBefore():
		found.action, found.reason = rotateCA, fmt.Sprintf("its CA expires at %s", ca.Cert.NotAfter.Format(time.RFC3339))
	case leaf.NotAfter.Sub(now) < c.opts.renewBefore():
		found.action, found.reason = renewLeaf, fmt.Sprintf("the serving certificate expires at %s", leaf.NotAfter.Format(time.RFC3339))
	case leaf.NotAfter.Sub(now) > c.opts.validity+time.Minute:
		found.action, found.reason = renewLeaf, fmt.Sprintf("the serving certificate is valid until %s, longer than --self-signed-cert-validity=%s", leaf.NotAfter.Format(time.RFC3339), c.opts.validity)
	default:
		for _, h := range c.opts.hosts {
			if err := leaf.VerifyHostname(h); err != nil {
				found.action, found.reason = renewLeaf, fmt.Sprintf("the serving certificate is not for %s", h)
				break
			}
		}
	}
	return found
}

// ensureSecret returns the Secret once it holds a certificate inspect
// keeps, creating, renewing or replacing it as needed. Another replica
// may write at the same time: a lost race reads the winner's Secret.
func (c *selfSignedCertificate) ensureSecret(ctx context.Context) (*corev1.Secret, error) {
	api := c.client.CoreV1().Secrets(c.namespace)
	var lastErr error
	for range 3 {
		existing, err := api.Get(ctx, c.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			data, err := c.issue(nil, nil)
			if err != nil {
				return nil, err
			}
			created, err := api.Create(ctx, c.ownSecret(data), metav1.CreateOptions{})
			if lastErr = err; apierrors.IsAlreadyExists(err) {
				continue
			}
			if err == nil {
				klog.FromContext(ctx).Info("Created the self-signed certificate", "secret", c.opts.secret)
			}
			return created, err
		}
		if err != nil {
			return nil, err
		}
		found := c.inspect(existing)
		if found.action == keep {
			return existing, nil
		}
		updated, err := c.rewrite(ctx, existing, found)
		if lastErr = err; apierrors.IsConflict(err) {
			continue
		}
		return updated, err
	}
	return nil, lastErr
}

func (c *selfSignedCertificate) rewrite(ctx context.Context, existing *corev1.Secret, found verdict) (*corev1.Secret, error) {
	var data map[string][]byte
	var err error
	eventType, reason, message := corev1.EventTypeNormal, reasonCertificateRenewed, "Renewed the serving certificate: "+found.reason
	switch found.action {
	case renewLeaf:
		data, err = c.issue(found.ca, found.bundle)
	case rotateCA:
		// The old CA stays in the bundle until it expires: replicas that
		// have not reloaded yet still serve a certificate it issued.
		data, err = c.issue(nil, found.bundle)
		reason, message = reasonCARotated, "Rotated the CA and renewed the serving certificate: "+found.reason
	case replace:
		data, err = c.issue(nil, nil)
		eventType, reason, message = corev1.EventTypeWarning, reasonCertificateReplaced, "Replaced the Secret's certificate and CA, not trusted because "+found.reason
	}
	if err != nil {
		return nil, err
	}
	var updated *corev1.Secret
	if cannot := unupdatable(existing); cannot != "" {
		// A Secret's type cannot change and an immutable one's data cannot:
		// an Update would fail on every sync and the pod never start. The
		// planted Secret is deleted (that object only: a UID precondition)
		// and ours created in its place; another replica doing the same
		// makes one of the two creates fail, and the retry reads the winner's.
		message += "; the Secret was " + cannot + ", so it was deleted and created again"
		api := c.client.CoreV1().Secrets(c.namespace)
		if err := api.Delete(ctx, existing.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &existing.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deleting the planted Secret %s (%s): %w", c.opts.secret, cannot, err)
		}
		updated, err = api.Create(ctx, c.ownSecret(data), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil, apierrors.NewConflict(corev1.Resource("secrets"), c.name, err)
		}
	} else {
		next := existing.DeepCopy()
		next.Data = data
		if next.Labels == nil {
			next.Labels = map[string]string{}
		}
		next.Labels[managedByLabel] = managedByValue
		updated, err = c.client.CoreV1().Secrets(c.namespace).Update(ctx, next, metav1.UpdateOptions{})
	}
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info(message, "secret", c.opts.secret)
	if c.recorder != nil {
		c.recorder.Event(updated, eventType, reason, message)
	}
	return updated, nil
}

// ownSecret is the Secret the webhook makes: labelled as its own, of type
// kubernetes.io/tls, holding data.
func (c *selfSignedCertificate) ownSecret(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: c.namespace, Labels: map[string]string{managedByLabel: managedByValue}},
		Type:       corev1.SecretTypeTLS, Data: data,
	}
}

// unupdatable says why existing cannot be rewritten in place ("" when it
// can): its type is not kubernetes.io/tls, or it is immutable.
func unupdatable(existing *corev1.Secret) string {
	switch {
	case existing.Type != corev1.SecretTypeTLS:
		return fmt.Sprintf("of type %q, which cannot be changed to %s", existing.Type, corev1.SecretTypeTLS)
	case existing.Immutable != nil && *existing.Immutable:
		return "immutable"
	}
	return ""
}

// issue returns the Secret's data: a serving certificate from ca (a new CA
// when nil) and a CA bundle of that CA followed by the unexpired CAs of
// previous (the current bundle).
func (c *selfSignedCertificate) issue(ca *pki.CA, previous []*x509.Certificate) (map[string][]byte, error) {
	if ca == nil {
		var err error
		if ca, err = pki.NewCAValidFor("was-webhook-ca", c.opts.caValidity()); err != nil {
			return nil, err
		}
	}
	req := pki.CertRequest{CommonName: c.opts.hosts[0], Server: true, Validity: c.opts.validity}
	for _, h := range c.opts.hosts {
		if ip := net.ParseIP(h); ip != nil {
			req.IPs = append(req.IPs, ip)
		} else {
			req.DNSNames = append(req.DNSNames, h)
		}
	}
	kp, err := ca.Issue(req)
	if err != nil {
		return nil, err
	}
	key, err := pki.KeyPEM(kp.Key)
	if err != nil {
		return nil, err
	}
	caKey, err := pki.KeyPEM(ca.Key)
	if err != nil {
		return nil, err
	}
	bundle := pki.CertPEM(ca.Cert)
	now := time.Now()
	for _, old := range previous {
		if old.IsCA && !old.Equal(ca.Cert) && now.Before(old.NotAfter) {
			bundle = append(bundle, pki.CertPEM(old)...)
		}
	}
	return map[string][]byte{
		corev1.TLSCertKey: pki.CertPEM(kp.Cert), corev1.TLSPrivateKeyKey: key, caCertKey: bundle, caKeyKey: caKey,
	}, nil
}

// publishCABundle adds the CAs of bundle that each webhook's caBundle lacks.
// It only adds: a CA already there stays until it expires, since another
// replica may have published a newer CA than the Secret we read, or an
// operator one of theirs, and dropping it would fail every call to a pod
// serving a leaf it issued. The update carries the resourceVersion read, so
// a concurrent write is a conflict, retried on a fresh read, never
// overwritten. Only clientConfig.caBundle changes (the registration's
// ValidatingAdmissionPolicy denies this account anything else).
func (c *selfSignedCertificate) publishCABundle(ctx context.Context, bundle []byte) error {
	ours, err := certutil.ParseCertsPEM(bundle)
	if err != nil {
		return err
	}
	api := c.client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		wc, err := api.Get(ctx, c.opts.webhookConfiguration, metav1.GetOptions{})
		if err != nil {
			return err
		}
		changed := false
		for i := range wc.Webhooks {
			if merged, grew := mergeCABundle(wc.Webhooks[i].ClientConfig.CABundle, ours, time.Now()); grew {
				wc.Webhooks[i].ClientConfig.CABundle, changed = merged, true
			}
		}
		if !changed {
			return nil
		}
		if _, err := api.Update(ctx, wc, metav1.UpdateOptions{}); err != nil {
			return err
		}
		klog.FromContext(ctx).Info("Added the self-signed CA to the webhook's caBundle", "validatingWebhookConfiguration", c.opts.webhookConfiguration)
		return nil
	})
}

// mergeCABundle returns current plus the CAs of ours it lacks, without the
// certificates in current that have expired (or are no certificate); changed
// is false when there is nothing to add, in which case current is kept as it
// is (expired CAs go with the next addition: a bundle is never rewritten
// only to shrink it).
func mergeCABundle(current []byte, ours []*x509.Certificate, now time.Time) (merged []byte, changed bool) {
	var kept []*x509.Certificate
	for rest := current; len(rest) > 0; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if cert, err := x509.ParseCertificate(block.Bytes); err == nil && block.Type == "CERTIFICATE" && now.Before(cert.NotAfter) {
			kept = append(kept, cert)
		}
	}
	for _, ca := range ours {
		if now.Before(ca.NotAfter) && !slices.ContainsFunc(kept, ca.Equal) {
			kept, changed = append(kept, ca), true
		}
	}
	if !changed {
		return current, false
	}
	for _, cert := range kept {
		merged = append(merged, pki.CertPEM(cert)...)
	}
	return merged, true
}
