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
// renewed certificate is served without a restart.
func webhookTLSConfig(source certificateSource) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: source.GetCertificate}
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
