#!/usr/bin/env bash
# Builds what a kind node runs, from the Go module proxy, the way
# hack/build-binaries.sh builds the control plane (a generated scratch module
# whose replace block maps k8s.io/kubernetes's staging modules to their tags):
#
#   containerd, containerd-shim-runc-v2, ctr     at CONTAINERD_VERSION (Kubernetes >= 1.36 wants containerd 2.x;
#                                                 Debian 12 ships 1.6)
#   coredns                                      at COREDNS_VERSION (the tag kubeadm asks for), with
#                                                 the plugins kubeadm's Corefile uses only
#   kind (the CLI)                               at KIND_VERSION
#   crictl                                       at CRICTL_VERSION (kind load and export logs use it)
#
# Output: $OUTPUT_DIR/bin/kind-node/$KUBE_VERSION/<binary>, rebuilt only when its
# stamp (versions + this script's hash) changes. The Kubernetes binaries,
# kubelet, kubeadm and kube-proxy included, come from hack/build-binaries.sh
# ($OUTPUT_DIR/bin/kube/$KUBE_VERSION: `node` builds the node's three from the
# control plane's module, sharing its build cache), etcd from its tools.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KUBE_VERSION=${KUBE_VERSION:-$("$ROOT/hack/versions.sh" kube)}
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.3.4}
COREDNS_VERSION=${COREDNS_VERSION:-v1.14.6}
KIND_VERSION=${KIND_VERSION:-v0.33.0}
CRICTL_VERSION=${CRICTL_VERSION:-v1.37.0}
OUTPUT_DIR=${OUTPUT_DIR:-$ROOT/_output}
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
# Static binaries: they run inside a Debian rootfs whose libc we do not control.
export CGO_ENABLED=0

log() { printf '[node-binaries %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '[node-binaries] ERROR: %s\n' "$*" >&2; exit 1; }
command -v go >/dev/null || die "go is not on PATH"
# Bump when a build recipe below changes: the stamps hold the versions and this.
RECIPE=2

bin_dir=$OUTPUT_DIR/bin/kind-node/$KUBE_VERSION
mkdir -p "$bin_dir"

up_to_date() { # name stamp bins...
  local name=$1 stamp=$2; shift 2
  [[ -f $bin_dir/.stamp-$name && "$(cat "$bin_dir/.stamp-$name")" == "$stamp" ]] || return 1
  for b in "$@"; do [[ -x $bin_dir/$b ]] || return 1; done
}

gobuild() { # module-dir output package [ldflags] [tags]
  local t0=$SECONDS
  (cd "$1" && go build -trimpath ${5:+-tags "$5"} -ldflags "${4:--s -w}" -o "$bin_dir/.$2.new" "$3") || die "building $2 ($3) failed"
  mv -f "$bin_dir/.$2.new" "$bin_dir/$2"
  log "built $2 in $((SECONDS - t0))s"
}

build_kind() {
  local stamp="kind=$KIND_VERSION recipe=$RECIPE" mod=$OUTPUT_DIR/build/kind-cli
  up_to_date kind "$stamp" kind && { log "kind $KIND_VERSION up to date"; return; }
  mkdir -p "$mod"
  printf 'module local.build/kindcli\n\ngo 1.26.0\n\nrequire sigs.k8s.io/kind %s\n' "$KIND_VERSION" >"$mod/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/kind"\n' >"$mod/tools.go"
  (cd "$mod" && go mod tidy) || die "resolving sigs.k8s.io/kind@$KIND_VERSION failed"
  gobuild "$mod" kind sigs.k8s.io/kind
  echo "$stamp" >"$bin_dir/.stamp-kind"
}

build_others() {
  local stamp="containerd=$CONTAINERD_VERSION coredns=$COREDNS_VERSION crictl=$CRICTL_VERSION recipe=$RECIPE"
  up_to_date others "$stamp" containerd containerd-shim-runc-v2 ctr coredns crictl && { log "containerd/coredns/crictl up to date"; return; }
  local mod=$OUTPUT_DIR/build/kind-node-tools
  mkdir -p "$mod/coredns"
  # Each tool in its own module: their dependency graphs do not have to agree.
  mkdir -p "$mod/containerd" "$mod/crictl"
  printf 'module local.build/containerd\n\ngo 1.26.0\n\nrequire github.com/containerd/containerd/v2 %s\n' "$CONTAINERD_VERSION" >"$mod/containerd/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "github.com/containerd/containerd/v2/cmd/containerd"\n\t_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"\n\t_ "github.com/containerd/containerd/v2/cmd/ctr"\n)\n' >"$mod/containerd/tools.go"
  printf 'module local.build/coredns\n\ngo 1.26.0\n\nrequire github.com/coredns/coredns %s\n' "$COREDNS_VERSION" >"$mod/coredns/go.mod"
  # CoreDNS compiles in every plugin it ships (cloud DNS providers and all);
  # a kind node runs kubeadm's Corefile, so this main links only the plugins
  # it names (plus log) and the measured 754 s cold build shrinks with them.
  # The plugin order is coredns's own (core/dnsserver), not the import order.
  rm -f "$mod/coredns/tools.go"
  cat >"$mod/coredns/main.go" <<'GO'
// Command coredns is CoreDNS with the plugins of kubeadm's Corefile.
package main

import (
	_ "github.com/coredns/caddy/onevent"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() { coremain.Run() }
GO
  printf 'module local.build/crictl\n\ngo 1.26.0\n\nrequire sigs.k8s.io/cri-tools %s\n' "$CRICTL_VERSION" >"$mod/crictl/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/cri-tools/cmd/crictl"\n' >"$mod/crictl/tools.go"
  for m in containerd coredns crictl; do
    log "go mod tidy in $mod/$m"
    (cd "$mod/$m" && go mod tidy) || die "resolving $m failed"
  done
  local cver="-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION"
  local ctags="no_btrfs no_devmapper no_zfs no_aufs"
  gobuild "$mod/containerd" containerd github.com/containerd/containerd/v2/cmd/containerd "$cver" "$ctags"
  gobuild "$mod/containerd" containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 "$cver" "$ctags"
  gobuild "$mod/containerd" ctr github.com/containerd/containerd/v2/cmd/ctr "$cver" "$ctags"
  gobuild "$mod/coredns" coredns .
  gobuild "$mod/crictl" crictl sigs.k8s.io/cri-tools/cmd/crictl "-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version=$CRICTL_VERSION"
  echo "$stamp" >"$bin_dir/.stamp-others"
}

case ${1:-all} in
  all) build_kind; build_others ;;
  kind) build_kind ;;
  others) build_others ;;
  *) die "usage: $0 [all|kind|others]" ;;
esac
log "done: $bin_dir"
