package kubeadmhook

import (
	"fmt"
	"strings"
	"testing"
)

func TestNodeControlCommand(t *testing.T) {
	for _, tc := range []struct{ tmpl, action, node, want, err string }{
		{"", "stop", "kind-worker", "docker stop 'kind-worker'", ""},
		{"podman {action} {node}", "start", "w1", "podman start 'w1'", ""},
		{"ssh root@{node} systemctl {action} kubelet containerd", "stop", "n'1", `ssh root@'n'\''1' systemctl stop kubelet containerd`, ""},
		{"docker stop {node}", "stop", "x", "", "needs {action} and {node}"},
		{"", "restart", "x", "", `action "restart"`},
	} {
		got, err := NodeControl{Template: tc.tmpl}.Command(tc.action, tc.node)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q %s %s: want an error with %q, got %q, %v", tc.tmpl, tc.action, tc.node, tc.err, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q %s %s = %q, %v; want %q", tc.tmpl, tc.action, tc.node, got, err, tc.want)
		}
	}
}

// kubeadm's etcd static pod, as kind v0.33 writes it.
func TestParseEtcdFlags(t *testing.T) {
	e := parseEtcdFlags([]string{"etcd", "--advertise-client-urls=https://172.18.0.3:2379,https://[::1]:2379",
		"--cert-file=/etc/kubernetes/pki/etcd/server.crt", "--client-cert-auth=true", "--data-dir=/var/lib/etcd",
		"--key-file=/etc/kubernetes/pki/etcd/server.key", "--listen-client-urls=https://127.0.0.1:2379,https://172.18.0.3:2379",
		"--trusted-ca-file=/etc/kubernetes/pki/etcd/ca.crt"})
	if e.Endpoint != "https://172.18.0.3:2379" || e.CAFile != "/etc/kubernetes/pki/etcd/ca.crt" ||
		e.CertFile != "/etc/kubernetes/pki/etcd/server.crt" || e.KeyFile != "/etc/kubernetes/pki/etcd/server.key" {
		t.Fatalf("parsed %+v", e)
	}
}

func TestParseEndpointStatus(t *testing.T) {
	out := `[{"Endpoint":"https://127.0.0.1:2379","Status":{"header":{"cluster_id":1,"member_id":2,"revision":48213,"raft_term":3},"version":"3.6.5","dbSize":5062656,"leader":2}}]`
	if rev, err := parseEndpointStatus([]byte(out)); err != nil || rev != 48213 {
		t.Fatalf("revision %d, %v; want 48213", rev, err)
	}
	if _, err := parseEndpointStatus([]byte("Error: context deadline exceeded")); err == nil {
		t.Fatal("no revision in an error: want an error")
	}
}

// A stop's crictl call must outlast the grace it gives the container: with
// crictl's default 2 s request timeout, a kube-apiserver stopped with a 2 s
// grace that lingers until SIGKILL made the call fail (kind, 2026-12-04).
func TestStopStaticPodScriptOutlastsTheGrace(t *testing.T) {
	for _, component := range FaultComponents {
		script := stopStaticPodScript(component)
		var call, grace int
		i := strings.Index(script, "crictl --timeout ")
		if i < 0 {
			t.Fatalf("%s: no crictl --timeout in %q", component, script)
		}
		if _, err := fmt.Sscanf(script[i:], "crictl --timeout %ds stop --timeout %d", &call, &grace); err != nil {
			t.Fatalf("%s: %q: %v", component, script[i:], err)
		}
		if grace != stopGrace(component) || call <= grace {
			t.Errorf("%s: crictl waits %d s for a stop with %d s of grace (want the grace %d and more than it)", component, call, grace, stopGrace(component))
		}
	}
}
