#!/usr/bin/env bash
# The kind node image of a worker whose kubelet is older than the control
# plane (make e2e-kind KIND_SKEW_WORKER=1, kubelet version skew):
# $KIND_WORKER_IMAGE (default localhost/kind-node:<KUBELET_VERSION>-worker) is
# the node image $KIND_NODE_IMAGE (hack/kind-image.sh, built first or found up
# to date) with the kubelet and kubeadm of KUBELET_VERSION (default
# `hack/versions.sh skew`, the previous minor) in /usr/bin, built as the node
# image's are (hack/build-binaries.sh node), and that version in /kind/version
# (kind picks the node's kubeadm configuration API from it).
#
# Only those two binaries are a worker's own. containerd, runc, the CNI
# plugins and the preloaded images stay the control plane's, which is what a
# worker of a cluster upgraded control plane first runs beside its older
# kubelet: kube-proxy comes from the control plane's DaemonSet
# (registry.k8s.io/kube-proxy:<KUBE_VERSION>, preloaded here) and pause is
# 3.10.2 for both versions. A whole node image of the older version
# (KUBE_VERSION=v1.36.3 SKEW_KUBE_VERSION= hack/kind-image.sh) would work as a
# worker only after a registry served it the control plane's kube-proxy, and
# costs the older control-plane images besides. The worker keeps the node
# image's kubectl (kind runs kubectl on the control-plane node only).
#
# A separate script, so that hack/kind-image.sh, whose hash is in its image's
# stamp, stays as it is: the node image is shared by every checkout on the
# machine. This image's stamp label holds the node image's ID, the kubelet
# version and this script's and hack/build-binaries.sh's hash: it is rebuilt
# (about a minute, binaries cached) only when one of them changes.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
KUBE_VERSION=${KUBE_VERSION:-$(hack/versions.sh kube)}
KUBELET_VERSION=${KUBELET_VERSION:-$(hack/versions.sh skew)}
OUTPUT_DIR=${OUTPUT_DIR:-$ROOT/_output}
KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-localhost/kind-node:$KUBE_VERSION}
KIND_WORKER_IMAGE=${KIND_WORKER_IMAGE:-localhost/kind-node:$KUBELET_VERSION-worker}
export GOFLAGS="${GOFLAGS:-} -buildvcs=false" GOTOOLCHAIN=${GOTOOLCHAIN:-local}
STAMP_LABEL=was-harness.io/kind-image-stamp
log() { printf '[kind-worker-image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '[kind-worker-image] ERROR: %s\n' "$*" >&2; exit 1; }
t0=$SECONDS

[[ $KUBELET_VERSION != "$KUBE_VERSION" ]] || die "KUBELET_VERSION is KUBE_VERSION ($KUBE_VERSION): $KIND_NODE_IMAGE is that worker already"
docker info >/dev/null 2>&1 || die "no running Docker: start one (hack/container-engine.sh up)"
KUBE_VERSION=$KUBE_VERSION KIND_NODE_IMAGE=$KIND_NODE_IMAGE hack/kind-image.sh

base_id=$(docker image inspect -f '{{.Id}}' "$KIND_NODE_IMAGE")
scripts=$(cat "${BASH_SOURCE[0]}" hack/build-binaries.sh | sha256sum | cut -c1-16)
stamp="base=$base_id kubelet=$KUBELET_VERSION scripts=$scripts"
if [[ "$(docker image inspect -f "{{index .Config.Labels \"$STAMP_LABEL\"}}" "$KIND_WORKER_IMAGE" 2>/dev/null)" == "$stamp" ]]; then
  log "$KIND_WORKER_IMAGE up to date (label $STAMP_LABEL: $stamp)"; exit 0
fi

log "$KIND_WORKER_IMAGE: $KIND_NODE_IMAGE with the kubelet and kubeadm of $KUBELET_VERSION"
nice -n 19 ionice -c3 env KUBE_VERSION="$KUBELET_VERSION" hack/build-binaries.sh node >&2
bin=$OUTPUT_DIR/bin/kube/$KUBELET_VERSION
got=$("$bin/kubelet" --version 2>&1) || die "$bin/kubelet --version failed: $got"
[[ $got == "Kubernetes $KUBELET_VERSION" ]] || die "$bin/kubelet reports \"$got\", not $KUBELET_VERSION"
got=$("$bin/kubeadm" version -o short 2>&1) || die "$bin/kubeadm version failed: $got"
[[ $got == "$KUBELET_VERSION" ]] || die "$bin/kubeadm reports \"$got\", not $KUBELET_VERSION"

work=$(mktemp -d)
# A created container never starts: only the copied files differ from the node image.
cid=$(docker create "$KIND_NODE_IMAGE")
trap 'docker rm -f "$cid" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
for b in kubelet kubeadm; do docker cp "$bin/$b" "$cid:/usr/bin/$b" >/dev/null; done
echo "$KUBELET_VERSION" >"$work/version"
docker cp "$work/version" "$cid:/kind/version" >/dev/null
old_id=$(docker image inspect -f '{{.Id}}' "$KIND_WORKER_IMAGE" 2>/dev/null || true)
# The node image's labels (pause image, skew images) carry over; the stamp is this image's.
docker commit --change "LABEL $STAMP_LABEL=\"$stamp\" was-harness.io/kubelet-version=$KUBELET_VERSION" "$cid" "$KIND_WORKER_IMAGE" >/dev/null
# The node image's check that its cgo-built binaries run on its Debian glibc, in this image.
got=$(docker run --rm --entrypoint /usr/bin/kubelet "$KIND_WORKER_IMAGE" --version 2>&1) || die "the kubelet does not run in $KIND_WORKER_IMAGE: $got"
[[ $got == "Kubernetes $KUBELET_VERSION" ]] || die "the kubelet of $KIND_WORKER_IMAGE reports \"$got\", not $KUBELET_VERSION"
[[ -n $old_id && $old_id != "$(docker image inspect -f '{{.Id}}' "$KIND_WORKER_IMAGE")" ]] &&
  { docker rmi "$old_id" >/dev/null 2>&1 || log "could not remove the replaced image $old_id"; }
log "built $KIND_WORKER_IMAGE in $((SECONDS - t0))s (a layer of $(docker history --format '{{.Size}}' "$KIND_WORKER_IMAGE" | head -1) over $KIND_NODE_IMAGE)"
