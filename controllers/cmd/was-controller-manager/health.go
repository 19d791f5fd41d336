package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// healthChecks is /healthz: every named check must pass. The kubelet's
// readiness probe and the local cluster's start-up wait read it.
type healthChecks struct {
	mu     sync.Mutex
	names  []string
	checks map[string]func() error
}

func newHealthChecks() *healthChecks { return &healthChecks{checks: map[string]func() error{}} }

// add registers (or replaces) a check.
func (h *healthChecks) add(name string, check func() error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.checks[name]; !ok {
		h.names = append(h.names, name)
	}
	h.checks[name] = check
}

// failing returns one line per failing check.
func (h *healthChecks) failing() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, name := range h.names {
		if err := h.checks[name](); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", name, err))
		}
	}
	return out
}

func (h *healthChecks) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if failing := h.failing(); len(failing) > 0 {
		http.Error(w, strings.Join(failing, "\n"), http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok"))
}
