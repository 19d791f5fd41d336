package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
)

// clientAuth is the webhook's check of its caller. The API server is the
// webhook's only legitimate client, and it can present a client
// certificate (its AdmissionConfiguration's kubeConfigFile, see
// docs/install.md): with --client-ca-file, a connection without a
// certificate that chains to that CA, for client authentication, is refused
// in the TLS handshake, before any request is read. --client-allowed-names
// narrows it to certificates of those common names, for a CA that also
// signs other clients (a cluster CA does).
type clientAuth struct {
	ca           *dynamiccertificates.DynamicFileCAContent // reloaded when the file changes
	allowedNames []string
}

// refusedClients counts handshakes refused for the client's certificate.
var refusedClients = metrics.NewCounter(&metrics.CounterOpts{
	Name:           "was_webhook_refused_client_certificates_total",
	Help:           "TLS handshakes of the webhook refused because the client presented no certificate, or one that --client-ca-file and --client-allowed-names do not accept.",
	StabilityLevel: metrics.ALPHA,
})

func init() { legacyregistry.MustRegister(refusedClients) }

func newClientAuth(caFile string, allowedNames []string) (*clientAuth, error) {
	ca, err := dynamiccertificates.NewDynamicCAContentFromFile("webhook-client-ca", caFile)
	if err != nil {
		return nil, fmt.Errorf("--client-ca-file: %w", err)
	}
	return &clientAuth{ca: ca, allowedNames: allowedNames}, nil
}

// run reloads the CA file until ctx ends.
func (a *clientAuth) run(ctx context.Context) { go a.ca.Run(ctx, 1) }

// configure makes config ask every client for a certificate and refuse
// the handshake of one that verifyConnection refuses.
func (a *clientAuth) configure(config *tls.Config) {
	config.ClientAuth = tls.RequireAnyClientCert
	config.VerifyConnection = a.verifyConnection
}

func (a *clientAuth) verifyConnection(cs tls.ConnectionState) error {
	err := a.verify(cs)
	if err != nil {
		refusedClients.Inc()
	}
	return err
}

func (a *clientAuth) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("no client certificate: only the API server may call this webhook")
	}
	opts, ok := a.ca.VerifyOptions()
	if !ok {
		return errors.New("no client CA loaded")
	}
	opts.Intermediates = x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	opts.KeyUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	leaf := cs.PeerCertificates[0]
	if _, err := leaf.Verify(opts); err != nil {
		return fmt.Errorf("client certificate %q: %w", leaf.Subject.CommonName, err)
	}
	if len(a.allowedNames) > 0 && !slices.Contains(a.allowedNames, leaf.Subject.CommonName) {
		return fmt.Errorf("client certificate %q is not one of --client-allowed-names", leaf.Subject.CommonName)
	}
	return nil
}

// handshakeLog is the webhook server's error log. Refused handshakes are
// what a flood of forged or unauthenticated calls produces, so they are
// counted and summarised at most once per interval rather than logged one
// by one (which would let a flood fill the node's disk through the log);
// every other server error is logged as it comes.
type handshakeLog struct {
	interval time.Duration
	last     atomic.Int64 // unix nanoseconds of the last summary
	count    atomic.Int64 // refused since the last summary
}

func newHandshakeLog(interval time.Duration) *log.Logger {
	h := &handshakeLog{interval: interval}
	h.last.Store(time.Now().UnixNano())
	return log.New(h, "", 0)
}

func (h *handshakeLog) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	if !strings.Contains(line, "TLS handshake error") {
		klog.InfoS("Webhook server", "message", line)
		return len(p), nil
	}
	n := h.count.Add(1)
	now := time.Now().UnixNano()
	if last := h.last.Load(); now-last >= int64(h.interval) && h.last.CompareAndSwap(last, now) {
		h.count.Add(-n)
		klog.InfoS("Refused TLS handshakes", "count", n, "since", time.Duration(now-last).Round(time.Second), "latest", line)
	}
	return len(p), nil
}
