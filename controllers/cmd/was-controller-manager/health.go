package main

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// healthChecks is /healthz, the readiness: every named check must pass.
// The kubelet's readiness probe and the local cluster's start-up wait read
// it. Its liveness checks alone are /livez (Livez), the kubelet's liveness
// probe: only what a restart cures, never "not ready yet" (informers not
// synced, a standby, a certificate near its end), or a slow start or a
// standby would be killed over and over.
type healthChecks struct {
	mu       sync.Mutex
	names    []string
	checks   map[string]func() error
	liveness map[string]bool
}

// newHealthChecks starts not ready, with a "start-up" check that fails
// until started is called: the servers answer /healthz before the webhook's
// certificate and the controllers register their own checks, and a process
// with no check yet must not look ready (the local cluster's start-up wait
// then lets a spec read a Secret the webhook is still replacing).
func newHealthChecks() *healthChecks {
	h := &healthChecks{checks: map[string]func() error{}, liveness: map[string]bool{}}
	h.add(startUpCheck, func() error {
		return errors.New("still starting: the webhook's certificate or the controllers are not set up yet")
	})
	return h
}

const startUpCheck = "start-up"

// started ends the start-up: call it once every check is registered.
func (h *healthChecks) started() { h.add(startUpCheck, func() error { return nil }) }

// add registers (or replaces) a readiness check.
func (h *healthChecks) add(name string, check func() error) { h.register(name, check, false) }

// addLiveness registers (or replaces) a check of both /livez and /healthz:
// a process failing it is stuck and must be restarted.
func (h *healthChecks) addLiveness(name string, check func() error) { h.register(name, check, true) }

func (h *healthChecks) register(name string, check func() error, liveness bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.checks[name]; !ok {
		h.names = append(h.names, name)
	}
	h.checks[name] = check
	h.liveness[name] = liveness
}

// failing returns one line per failing check (the liveness ones only, with
// onlyLiveness).
func (h *healthChecks) failing(onlyLiveness bool) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, name := range h.names {
		if onlyLiveness && !h.liveness[name] {
			continue
		}
		if err := h.checks[name](); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", name, err))
		}
	}
	return out
}

func (h *healthChecks) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	serveChecks(w, h.failing(false))
}

// Livez is /livez: the liveness checks only.
func (h *healthChecks) Livez() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { serveChecks(w, h.failing(true)) })
}

func serveChecks(w http.ResponseWriter, failing []string) {
	if len(failing) > 0 {
		http.Error(w, strings.Join(failing, "\n"), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok"))
}
