package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLivenessIsOnlyWhatARestartCures: /livez fails for the leader-election
// watchdog alone; informers not synced, a standby and a certificate near
// its end make /healthz (readiness) fail, never /livez, so the kubelet's
// liveness probe never kills a slow start or a standby.
func TestLivenessIsOnlyWhatARestartCures(t *testing.T) {
	h := newHealthChecks()
	get := func(handler http.Handler, path string) (int, string) {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	h.started()
	var watchdog error
	h.add("controllers", func() error { return errors.New("leading, informers not synced") })
	h.add("serving-certificate", func() error { return errors.New("expires in 5s") })
	h.addLiveness("leader-election", func() error { return watchdog })

	if code, body := get(h.Livez(), "/livez"); code != http.StatusOK {
		t.Errorf("/livez while only readiness checks fail: HTTP %d %q, want 200", code, body)
	}
	code, body := get(h, "/healthz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "controllers:") || !strings.Contains(body, "serving-certificate:") {
		t.Errorf("/healthz: HTTP %d %q, want 503 naming both readiness checks", code, body)
	}

	watchdog = errors.New("failed election to renew leadership on lease was-controller-manager")
	code, body = get(h.Livez(), "/livez")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "leader-election:") || strings.Contains(body, "controllers:") {
		t.Errorf("/livez with the watchdog failing: HTTP %d %q, want 503 naming leader-election only", code, body)
	}
	if _, body := get(h, "/healthz"); !strings.Contains(body, "leader-election:") {
		t.Errorf("/healthz must include the liveness checks too: %q", body)
	}
}

// TestNotReadyUntilStarted: /healthz fails until the process has set up
// everything (the webhook's certificate included) and called started, even
// though no other check is registered yet; /livez does not, so a slow start
// is not killed.
func TestNotReadyUntilStarted(t *testing.T) {
	h := newHealthChecks()
	get := func(handler http.Handler) (int, string) {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get(h); code != http.StatusServiceUnavailable || !strings.Contains(body, startUpCheck+":") {
		t.Errorf("/healthz before started: HTTP %d %q, want 503 naming %s", code, body, startUpCheck)
	}
	if code, body := get(h.Livez()); code != http.StatusOK {
		t.Errorf("/livez before started: HTTP %d %q, want 200", code, body)
	}
	h.started()
	if code, body := get(h); code != http.StatusOK {
		t.Errorf("/healthz after started: HTTP %d %q, want 200", code, body)
	}
}
