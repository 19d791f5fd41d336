package main

import (
	"net/http"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// tagUserAgent appends "instance/<identity>" to the User-Agent of every
// request, after client-go has set it. Every instance authenticates as the
// same users (the controllers' kube-system service accounts), so this is how
// the API server's audit log tells which instance wrote: with leader
// election, only the leader's identity may appear on a write.
func tagUserAgent(identity string) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return &userAgentTagger{suffix: " instance/" + identity, next: next}
	}
}

type userAgentTagger struct {
	suffix string
	next   http.RoundTripper
}

func (t *userAgentTagger) RoundTrip(req *http.Request) (*http.Response, error) {
	req = utilnet.CloneRequest(req)
	req.Header.Set("User-Agent", req.Header.Get("User-Agent")+t.suffix)
	return t.next.RoundTrip(req)
}

// WrappedRoundTripper lets client-go's transport helpers see through the tagger.
func (t *userAgentTagger) WrappedRoundTripper() http.RoundTripper { return t.next }
