package main

import (
	"net/http"
	"net/http/pprof"
)

// pprofMux serves Go's runtime profiles (CPU, heap, goroutines, mutex and
// block) under /debug/pprof/, the paths `go tool pprof` expects. It is a
// mux of its own, on an address of its own (--pprof-address), so profiles
// are never reachable through the /healthz and /metrics port a probe or a
// scraper is given.
func pprofMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// newPprofServer is newServer without the write timeout: a CPU profile or a
// trace streams for as many seconds as the client asks (?seconds=N), longer
// than writeTimeout. The other bounds stay.
func newPprofServer(addr string) *http.Server {
	srv := newServer(addr, pprofMux(), nil)
	srv.WriteTimeout = 0
	return srv
}
