package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// probeCommand is `was-controller-manager probe [URL]`: it exits 0 when URL
// (by default the loopback /healthz) answers 200. deploy/ runs it as an exec
// probe, so /healthz and /metrics can stay bound to loopback instead of being
// open to the cluster network for the kubelet's HTTP probe.
const probeCommand = "probe"

const defaultProbeURL = "http://127.0.0.1:10290/healthz"

func runProbe(args []string) int {
	url := defaultProbeURL
	if len(args) > 0 {
		url = args[0]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(os.Stderr, "GET %s: %s\n%s\n", url, resp.Status, body)
		return 1
	}
	return 0
}
