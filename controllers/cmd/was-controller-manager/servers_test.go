package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workload-aware/apps-harness/pkg/pki"
)

// TestServersAreBounded: both servers get every timeout, so a client that
// sends its headers slowly (slowloris) or idles cannot hold a connection.
func TestServersAreBounded(t *testing.T) {
	srv := newServer("127.0.0.1:0", http.NotFoundHandler(), nil)
	for name, d := range map[string]time.Duration{"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout, "WriteTimeout": srv.WriteTimeout, "IdleTimeout": srv.IdleTimeout} {
		if d <= 0 {
			t.Errorf("%s unset", name)
		}
	}
	if srv.MaxHeaderBytes <= 0 || srv.MaxHeaderBytes > 1<<20 {
		t.Errorf("MaxHeaderBytes %d", srv.MaxHeaderBytes)
	}
	// The API server waits at most 30 s (timeoutSeconds' maximum) for a review.
	if srv.WriteTimeout < 30*time.Second {
		t.Errorf("WriteTimeout %s is shorter than the API server's longest webhook timeout", srv.WriteTimeout)
	}
}

func TestHealthChecksNameWhatFails(t *testing.T) {
	h := newHealthChecks()
	h.started()
	h.add("a", func() error { return nil })
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, _ := get(); code != http.StatusOK {
		t.Errorf("all checks pass: HTTP %d", code)
	}
	h.add("serving-certificate", func() error { return errors.New("expires in 5s") })
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "serving-certificate: expires in 5s") {
		t.Errorf("a failing check: HTTP %d %q", code, body)
	}
}

// TestProbeCommand: `was-controller-manager probe URL` exits 0 only on 200.
func TestProbeCommand(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer ok.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "no", http.StatusServiceUnavailable) }))
	defer failing.Close()
	if code := runProbe([]string{ok.URL}); code != 0 {
		t.Errorf("probe of a healthy server exited %d", code)
	}
	if code := runProbe([]string{failing.URL}); code == 0 {
		t.Error("probe of a failing server exited 0")
	}
	if code := runProbe([]string{"http://127.0.0.1:1/healthz"}); code == 0 {
		t.Error("probe of a closed port exited 0")
	}
}

// TestFileCertificateIsReloadedWhenTheFilesChange: the local cluster's
// --tls-cert-file is served per handshake too, and a rewritten pair is
// picked up without a restart.
func TestFileCertificateIsReloadedWhenTheFilesChange(t *testing.T) {
	dir := t.TempDir()
	ca, _ := pki.NewCA("ca")
	write := func() *pki.KeyPair {
		kp, err := ca.Issue(pki.CertRequest{CommonName: "w", Server: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := kp.Write(dir, "tls"); err != nil {
			t.Fatal(err)
		}
		return kp
	}
	first := write()
	f, err := newFileCertificate(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	f.reloadInterval = 0
	if served(t, f).SerialNumber.Cmp(first.Cert.SerialNumber) != 0 {
		t.Fatal("not serving the file's certificate")
	}
	second := write()
	// A later modification time, as a renewal would give it.
	later := time.Now().Add(time.Second)
	for _, p := range []string{"tls.crt", "tls.key"} {
		if err := os.Chtimes(filepath.Join(dir, p), later, later); err != nil {
			t.Fatal(err)
		}
	}
	if served(t, f).SerialNumber.Cmp(second.Cert.SerialNumber) != 0 {
		t.Error("the rewritten certificate is not served")
	}
	if err := f.Check(); err != nil {
		t.Errorf("Check: %v", err)
	}
	// A half-written pair keeps the previous one in service.
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if served(t, f).SerialNumber.Cmp(second.Cert.SerialNumber) != 0 {
		t.Error("a broken file replaced the served certificate")
	}
}

// TestUserAgentCarriesTheInstance: every request names the instance that
// sent it after client-go's own User-Agent.
func TestUserAgentCarriesTheInstance(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r.UserAgent() }))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("User-Agent", "was-controller-manager/v0.0.0 (linux/amd64) kubernetes/$Format/system:serviceaccount:kube-system:deployment-controller")
	resp, err := tagUserAgent("host_1234")(http.DefaultTransport).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !strings.HasSuffix(got, "deployment-controller instance/host_1234") {
		t.Errorf("User-Agent %q lacks the instance", got)
	}
	if req.Header.Get("User-Agent") != "was-controller-manager/v0.0.0 (linux/amd64) kubernetes/$Format/system:serviceaccount:kube-system:deployment-controller" {
		t.Error("the caller's request was modified")
	}
}

func TestLeaderElectionDefaultsAndValidation(t *testing.T) {
	d := defaultLeaderElection()
	if d.LeaderElect || d.ResourceNamespace != "was-system" || d.ResourceName != "was-controller-manager" || d.ResourceLock != "leases" {
		t.Errorf("defaults %+v: want off, Lease was-system/was-controller-manager (the RBAC names it)", d)
	}
	if err := validateLeaderElection(d); err != nil {
		t.Errorf("defaults rejected: %v", err)
	}
	d.LeaderElect, d.ResourceLock = true, "endpoints"
	if err := validateLeaderElection(d); err == nil {
		t.Error("a lock other than leases accepted")
	}
}

// TestWebhookServerRefusesBeyondItsInFlightBound: requests beyond the bound
// get 429 at once, and the held ones complete.
func TestWebhookServerRefusesBeyondItsInFlightBound(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, maxWebhookInFlight)
	h := limitInFlight(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-release
	}), maxWebhookInFlight)
	done := make(chan int, maxWebhookInFlight)
	for range maxWebhookInFlight {
		go func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
			done <- rec.Code
		}()
	}
	for range maxWebhookInFlight {
		<-entered
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
	if rec.Code != http.StatusTooManyRequests {
		t.Errorf("request %d with %d in flight: HTTP %d, want 429", maxWebhookInFlight+1, maxWebhookInFlight, rec.Code)
	}
	close(release)
	for range maxWebhookInFlight {
		if code := <-done; code != http.StatusOK {
			t.Errorf("a held request: HTTP %d", code)
		}
	}
}

// TestWebhookServerSpeaksTLS13AndHTTP11Only: a TLS 1.2 client is refused
// at the handshake, and a client offering HTTP/2 gets HTTP/1.1.
func TestWebhookServerSpeaksTLS13AndHTTP11Only(t *testing.T) {
	ca, err := pki.NewCA("test-ca")
	if err != nil {
		t.Fatal(err)
	}
	pair := tlsPair(t, ca, pki.CertRequest{CommonName: "127.0.0.1", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
	srv := newWebhookServer("127.0.0.1:0", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLSConfig = webhookTLSConfig(staticCertificate{&pair})
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	url := "https://" + serveTLS(t, srv) + "/"

	old := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS12}}}
	if resp, err := old.Get(url); err == nil {
		resp.Body.Close()
		t.Errorf("a TLS 1.2 client was served (%s)", resp.Proto)
	}
	h2 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	resp, err := h2.Get(url)
	if err != nil {
		t.Fatalf("a TLS 1.3 client: %v", err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 1 || resp.TLS == nil || resp.TLS.Version != tls.VersionTLS13 {
		t.Errorf("negotiated %s over TLS %x, want HTTP/1.1 over TLS 1.3", resp.Proto, resp.TLS.Version)
	}
}

type staticCertificate struct{ cert *tls.Certificate }

func (s staticCertificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return s.cert, nil
}

func (staticCertificate) Check() error { return nil }

// serveTLS serves srv (its TLSConfig) on a loopback port until the test
// ends, and returns the address.
func serveTLS(t *testing.T, srv *http.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// TestWebhookServesOnlyTheAPIServersClientCertificate: with
// --client-ca-file, a client without a certificate, with one of another
// CA, with a serving-only one or of a name not allowed is refused in the
// handshake; the API server's certificate is served.
func TestWebhookServesOnlyTheAPIServersClientCertificate(t *testing.T) {
	serverCA, err := pki.NewCA("serving-ca")
	if err != nil {
		t.Fatal(err)
	}
	clientCA, err := pki.NewCA("client-ca")
	if err != nil {
		t.Fatal(err)
	}
	otherCA, err := pki.NewCA("other-ca")
	if err != nil {
		t.Fatal(err)
	}
	pair := tlsPair(t, serverCA, pki.CertRequest{CommonName: "127.0.0.1", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
	caFile := filepath.Join(t.TempDir(), "client-ca.crt")
	if err := os.WriteFile(caFile, pki.CertPEM(clientCA.Cert), 0o600); err != nil {
		t.Fatal(err)
	}
	auth, err := newClientAuth(caFile, []string{"kube-apiserver-webhook-client"})
	if err != nil {
		t.Fatal(err)
	}
	srv := newWebhookServer("127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "served") }))
	srv.TLSConfig = webhookTLSConfig(staticCertificate{&pair})
	auth.configure(srv.TLSConfig)
	url := "https://" + serveTLS(t, srv) + "/"
	roots := x509.NewCertPool()
	roots.AddCert(serverCA.Cert)
	call := func(certs ...tls.Certificate) error {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}}
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if string(body) != "served" {
			return fmt.Errorf("HTTP %d %q", resp.StatusCode, body)
		}
		return nil
	}
	for name, certs := range map[string][]tls.Certificate{
		"no certificate":       nil,
		"another CA's":         {tlsPair(t, otherCA, pki.CertRequest{CommonName: "kube-apiserver-webhook-client", Client: true})},
		"a name not allowed":   {tlsPair(t, clientCA, pki.CertRequest{CommonName: "system:admin", Client: true})},
		"a serving-only usage": {tlsPair(t, clientCA, pki.CertRequest{CommonName: "kube-apiserver-webhook-client", Server: true})},
	} {
		if err := call(certs...); err == nil {
			t.Errorf("a client with %s was served", name)
		}
	}
	if err := call(tlsPair(t, clientCA, pki.CertRequest{CommonName: "kube-apiserver-webhook-client", Client: true})); err != nil {
		t.Errorf("the API server's client certificate was refused: %v", err)
	}
}

func tlsPair(t *testing.T, ca *pki.CA, req pki.CertRequest) tls.Certificate {
	t.Helper()
	kp, err := ca.Issue(req)
	if err != nil {
		t.Fatal(err)
	}
	key, err := pki.KeyPEM(kp.Key)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(pki.CertPEM(kp.Cert), key)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// TestWebhookDrainsForItsShutdownDelay: once asked to stop, the webhook
// serves on for the delay, closing each connection after its response (so
// the API server's next request opens a new one, which the Service routes to
// a pod that stays), then stops listening.
func TestWebhookDrainsForItsShutdownDelay(t *testing.T) {
	var draining atomic.Bool
	srv := newWebhookServer("127.0.0.1:0", closeWhenDraining(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "served") }), &draining))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Addr = ln.Addr().String()
	ln.Close()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(drainAfter(ctx, srv, &draining, time.Second), srv) }()
	url := "http://" + srv.Addr + "/"
	get := func() (*http.Response, error) {
		resp, err := http.Get(url)
		if err == nil {
			_, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		if _, err := get(); err == nil {
			break
		} else if time.Since(start) > 5*time.Second {
			t.Fatalf("the server never served: %v", err)
		}
	}
	stop()
	time.Sleep(100 * time.Millisecond)
	resp, err := get()
	if err != nil {
		t.Fatalf("a request during the shutdown delay was refused: %v", err)
	}
	if !resp.Close {
		t.Error("a response during the shutdown delay kept the connection alive")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server still serves well after its shutdown delay")
	}
	if _, err := get(); err == nil {
		t.Error("served after the shutdown delay")
	}
}
