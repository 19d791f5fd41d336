package main

import (
	"strings"
	"testing"
)

// TestClientRateFlagsAreValidated: a rate of zero (which client-go reads as
// its default) or a burst below one is refused, naming both flags.
func TestClientRateFlagsAreValidated(t *testing.T) {
	for _, o := range []options{{kubeAPIQPS: 0, kubeAPIBurst: 100}, {kubeAPIQPS: 50, kubeAPIBurst: 0}} {
		if err := o.validate(); err == nil || !strings.Contains(err.Error(), "--kube-api-qps") {
			t.Errorf("qps %v burst %d: %v, want an error naming --kube-api-qps", o.kubeAPIQPS, o.kubeAPIBurst, err)
		}
	}
	if err := (&options{kubeAPIQPS: 50, kubeAPIBurst: 100}).validate(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}
