package admission

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// TestBodyLimitIsSizedToTheAPIServersRequests: a review as large as the API
// server can send (a new object at its request limit plus the stored one) is
// read; a larger body is refused with 413 without being read whole.
func TestBodyLimitIsSizedToTheAPIServersRequests(t *testing.T) {
	if maxBodyBytes < apiServerRequestLimit+apiServerRequestLimit/2 {
		t.Fatalf("maxBodyBytes %d cannot hold an UPDATE review of a %d-byte object and its stored 1.5 MiB version", maxBodyBytes, apiServerRequestLimit)
	}
	if maxBodyBytes > 8<<20 {
		t.Fatalf("maxBodyBytes %d: more than any review the API server sends", maxBodyBytes)
	}
	srv := server(t, true, nil, nil)
	pad := func(n int) []byte {
		return append([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","pad":"`), append(bytes.Repeat([]byte("x"), n), []byte(`"}`)...)...)
	}
	if code, data := postRaw(t, srv, http.MethodPost, pad(4<<20)); code != http.StatusBadRequest || !strings.Contains(data, "no request") {
		t.Errorf("a 4 MiB review: HTTP %d %q, want it read and refused for having no request", code, data)
	}
	if code, data := postRaw(t, srv, http.MethodPost, pad(maxBodyBytes)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over the limit: HTTP %d %q, want 413", code, data)
	}
}
