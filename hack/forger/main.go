// Command forger is the hostile client of the install spec "the webhook
// under hostile load" (suites/install/hostile.go): from a pod in the
// cluster, it sends forged AdmissionReviews to the reference's webhook at a
// fixed rate, each on a new TLS connection, half with no client
// certificate and half with a self-signed one, and counts what came back.
// A webhook that requires the API server's client certificate refuses every
// one in the handshake: "served" must stay 0. It prints one JSON summary
// line on stdout when done, which the spec reads from the pod's log.
package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// summary is the line the spec reads.
type summary struct {
	Target   string         `json:"target"`
	Seconds  float64        `json:"seconds"`
	Sent     int64          `json:"sent"`     // requests attempted
	Refused  int64          `json:"refused"`  // no HTTP response: the connection was refused or closed
	Served   int64          `json:"served"`   // an HTTP response of any status: the webhook read the request
	Statuses map[string]int `json:"statuses"` // of the served ones
	Late     int64          `json:"late"`     // ticks dropped because every worker was busy
	Errors   []string       `json:"errors"`   // a few refusal errors, as examples
}

func main() {
	target := flag.String("target", "", "webhook URL, e.g. https://was-webhook.was-system.svc:443/validate-apps-v1-deployment")
	rate := flag.Int("rate", 500, "forged reviews per second")
	duration := flag.Duration("duration", time.Minute, "how long to send")
	workers := flag.Int("workers", 256, "requests in flight at most (each holds one connection: its handshake's latency times the rate)")
	namespace := flag.String("namespace", "default", "namespace of the Deployment the forged scale reviews name")
	name := flag.String("name", "web", "name of that Deployment")
	flag.Parse()
	if *target == "" || *rate <= 0 || *workers <= 0 {
		fmt.Fprintln(os.Stderr, "forger: --target, a positive --rate and --workers are required")
		os.Exit(2)
	}
	forged, err := selfSignedClientCertificate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "forger:", err)
		os.Exit(1)
	}
	body := forgedScaleReview(*namespace, *name)
	clients := []*http.Client{newClient(nil), newClient(&forged)}

	var s summary
	s.Target, s.Statuses = *target, map[string]int{}
	var mu sync.Mutex
	var sent, refused, served, late atomic.Int64
	ticks := make(chan int64, *workers)
	var wg sync.WaitGroup
	for range *workers {
		wg.Go(func() {
			for n := range ticks {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, *target, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := clients[n%2].Do(req)
				sent.Add(1)
				if err != nil {
					refused.Add(1)
					mu.Lock()
					if len(s.Errors) < 5 {
						s.Errors = append(s.Errors, err.Error())
					}
					mu.Unlock()
				} else {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					served.Add(1)
					mu.Lock()
					s.Statuses[resp.Status]++
					mu.Unlock()
				}
				cancel()
			}
		})
	}
	// Paced by what is due since the start, not one request per tick: a
	// ticker drops the ticks of a starved reader, and the forger would then
	// send less than its rate claims.
	start := time.Now()
	ticker := time.NewTicker(5 * time.Millisecond)
	for n := int64(0); time.Since(start) < *duration; {
		<-ticker.C
		for due := int64(time.Since(start).Seconds() * float64(*rate)); n < due; n++ {
			select {
			case ticks <- n:
			default:
				late.Add(1)
			}
		}
	}
	ticker.Stop()
	close(ticks)
	wg.Wait()
	s.Seconds = time.Since(start).Seconds()
	s.Sent, s.Refused, s.Served, s.Late = sent.Load(), refused.Load(), served.Load(), late.Load()
	out, _ := json.Marshal(s)
	fmt.Println(string(out))
}

// newClient opens a new connection per request (every request costs the
// webhook a handshake) and does not check the server: a forger does not care
// who answers.
func newClient(cert *tls.Certificate) *http.Client {
	// X25519 alone: the default hybrid post-quantum key exchange costs the
	// forger more CPU per handshake than it costs the webhook.
	cfg := &tls.Config{InsecureSkipVerify: true, CurvePreferences: []tls.CurveID{tls.X25519}} //nolint:gosec // the forger's point
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true, MaxConnsPerHost: 0}}
}

// selfSignedClientCertificate claims the API server's name without its CA.
func selfSignedClientCertificate() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "kube-apiserver-webhook-client"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// forgedScaleReview is a deployments/scale review, as the API server would
// send for a scale of namespace/name to 1 replica.
func forgedScaleReview(namespace, name string) []byte {
	scale := func(replicas int) map[string]any {
		return map[string]any{"apiVersion": "autoscaling/v1", "kind": "Scale",
			"metadata": map[string]any{"name": name, "namespace": namespace}, "spec": map[string]any{"replicas": replicas}}
	}
	review := map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid":         "00000000-0000-0000-0000-000000000001",
			"kind":        map[string]any{"group": "autoscaling", "version": "v1", "kind": "Scale"},
			"resource":    map[string]any{"group": "apps", "version": "v1", "resource": "deployments"},
			"subResource": "scale", "name": name, "namespace": namespace, "operation": "UPDATE",
			"userInfo": map[string]any{"username": "forger"},
			"object":   scale(1), "oldObject": scale(4),
		},
	}
	data, _ := json.Marshal(review)
	return data
}
