package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPprofServesProfilesWithoutWriteTimeout: the profiles are at the paths
// `go tool pprof` asks for, and a CPU profile longer than the other servers'
// write timeout is not cut off, while the header and idle bounds stay.
func TestPprofServesProfilesWithoutWriteTimeout(t *testing.T) {
	srv := newPprofServer("127.0.0.1:0")
	if srv.WriteTimeout != 0 {
		t.Errorf("WriteTimeout %s would cut a CPU profile of ?seconds=%d short", srv.WriteTimeout, int(srv.WriteTimeout.Seconds())+1)
	}
	if srv.ReadHeaderTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Errorf("ReadHeaderTimeout %s, IdleTimeout %s: want both bounded", srv.ReadHeaderTimeout, srv.IdleTimeout)
	}
	for path, want := range map[string]string{
		"/debug/pprof/":                  "goroutine",
		"/debug/pprof/goroutine?debug=1": "goroutine profile",
		"/debug/pprof/cmdline":           "",
	} {
		rec := httptest.NewRecorder()
		srv.Handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET %s: %d, body %.80q; want 200 containing %q", path, rec.Code, rec.Body.String(), want)
		}
	}
}
