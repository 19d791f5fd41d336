package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Bounds of both HTTP servers, so a slow or idle client (slowloris) cannot
// hold connections or goroutines forever. The API server gives the webhook at
// most its timeoutSeconds (5 s in deploy/, 30 s at most), so a request
// that takes longer than these is one nobody waits for any more.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 90 * time.Second
	maxHeaderBytes    = 64 << 10
	shutdownTimeout   = 5 * time.Second
)

// newServer returns an http.Server with the bounds above; tlsConfig nil
// serves plain HTTP.
func newServer(addr string, handler http.Handler, tlsConfig *tls.Config) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           handler,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}

// webhookTLSConfig looks the certificate up on every handshake, so a
// renewed certificate is served without a restart. The API server is the
// webhook's only client and speaks TLS 1.3, so nothing older is offered,
// and only HTTP/1.1 is (newWebhookServer).
func webhookTLSConfig(source certificateSource) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, GetCertificate: source.GetCertificate, NextProtos: []string{"http/1.1"}}
}

// maxWebhookInFlight bounds the reviews the webhook handles at once. Each
// may hold a body of up to twice the API server's request limit while it is
// decoded, so an unbounded number of parallel bodies would outgrow the
// container's memory limit; the API server's own reviews are small and
// quick, and one over the bound is refused at once (429) rather than queued.
const maxWebhookInFlight = 16

// newWebhookServer is newServer for the admission webhook: HTTP/1.1 only
// (HTTP/2 multiplexes many streams, each a body in flight, over one
// connection) and at most maxWebhookInFlight requests handled at once.
func newWebhookServer(addr string, handler http.Handler) *http.Server {
	srv := newServer(addr, limitInFlight(handler, maxWebhookInFlight), nil)
	srv.ErrorLog = newHandshakeLog(10 * time.Second)
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	return srv
}

// limitInFlight serves at most n requests at once through h and answers
// 429 Too Many Requests to any beyond them, without reading their bodies.
func limitInFlight(h http.Handler, n int) http.Handler {
	slots := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
			h.ServeHTTP(w, r)
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many requests in flight", http.StatusTooManyRequests)
		}
	})
}

// dropIdleConnections closes srv's idle kept-alive connections (the next
// request of their clients opens a new one, with a new TLS handshake).
func dropIdleConnections(srv *http.Server) {
	srv.SetKeepAlivesEnabled(false)
	srv.SetKeepAlivesEnabled(true)
}

// serve runs srv until ctx ends, then shuts it down gracefully.
func serve(ctx context.Context, srv *http.Server) error {
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	var err error
	if srv.TLSConfig != nil {
		err = srv.ListenAndServeTLS("", "") // the certificate comes from TLSConfig.GetCertificate
	} else {
		err = srv.ListenAndServe()
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("serving on %s: %w", srv.Addr, err)
}
