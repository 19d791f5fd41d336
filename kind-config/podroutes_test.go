package kindconfig

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// hack/kind-pod-routes.sh lays, on every running node of the cluster, a
// route to each other node's pod subnet through that node's address, read
// from the node's CNI configuration and the engine (not from the API server,
// which may be starting), and hack/kind-node-control.sh does that after a
// start. Here the engine is a fake that serves three nodes and records the
// routes it is asked for.
func TestPodRoutesAfterANodeStarts(t *testing.T) {
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	engine := filepath.Join(dir, "engine")
	script := `#!/bin/bash
echo "$*" >>` + calls + `
case "$1" in
  ps) printf 'c-worker\nc-control-plane\nc-worker2\n' ;;
  inspect)
    case "$*" in
      *io.x-k8s.kind.cluster*) echo c ;;
      *) case "${@: -1}" in c-control-plane) echo 172.18.0.2 ;; c-worker) echo 172.18.0.3 ;; c-worker2) echo 172.18.0.4 ;; esac ;;
    esac ;;
  exec)
    node=$2; shift 2
    case "$1" in
      sed) case $node in c-control-plane) echo 10.244.0.0/24 ;; c-worker) echo 10.244.1.0/24 ;; c-worker2) echo 10.244.2.0/24 ;; esac ;;
      ip) echo "$node: $*" >>` + filepath.Join(dir, "routes") + ` ;;
    esac ;;
esac
`
	if err := os.WriteFile(engine, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "../hack/kind-node-control.sh", "start", "c-control-plane")
	cmd.Env = append(os.Environ(), "KIND_PROVIDER="+engine)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kind-node-control.sh start: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "routes"))
	if err != nil {
		t.Fatalf("no route laid: %v", err)
	}
	got := strings.Split(strings.TrimSpace(string(raw)), "\n")
	slices.Sort(got)
	want := []string{
		"c-control-plane: ip route replace 10.244.1.0/24 via 172.18.0.3",
		"c-control-plane: ip route replace 10.244.2.0/24 via 172.18.0.4",
		"c-worker2: ip route replace 10.244.0.0/24 via 172.18.0.2",
		"c-worker2: ip route replace 10.244.1.0/24 via 172.18.0.3",
		"c-worker: ip route replace 10.244.0.0/24 via 172.18.0.2",
		"c-worker: ip route replace 10.244.2.0/24 via 172.18.0.4",
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("routes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	log, _ := os.ReadFile(calls)
	if !strings.HasPrefix(string(log), "start c-control-plane\n") {
		t.Errorf("the node was not started first; engine calls:\n%s", log)
	}
}
