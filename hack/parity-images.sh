#!/usr/bin/env bash
# The test images of make parity-kind, built offline (no image registry):
# Kubernetes' sig-apps Deployment, ReplicaSet and StatefulSet e2e specs run
# agnhost (imageutils.Agnhost and AgnhostPrev), busybox (imageutils.BusyBox)
# and pause (imageutils.Pause, preloaded in our node image: hack/kind-image.sh).
#   * agnhost: k8s.io/kubernetes/test/images/agnhost at the pinned version
#     (hack/parity-images/go.mod), static, on a busybox root filesystem (the
#     StatefulSet specs exec `/bin/sh -c 'mv -v ...'` in its pods, as upstream's
#     alpine-based image allows), entrypoint /agnhost, CMD pause (upstream's).
#     ONE binary is tagged under both versions the framework names (2.66.1 and
#     the previous 2.55): the specs only switch between the two tags to force
#     a rollout (a new pod template), they do not depend on what differs
#     between the versions.
#   * busybox: Debian's busybox-static (as the node image takes Debian
#     packages), /bin/busybox and a symlink per applet (sh, mv, ls, sleep, ...).
# The names are exactly imageutils.GetE2EImage's (hack/parity-images/imagenames.go
# prints them). Archives are cached in $OUTPUT_DIR/parity-images (rebuilt when
# missing, or PARITY_IMAGES_REBUILD=1) and printed, one path a line, for
# `kind load image-archive`.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
OUTPUT_DIR=${OUTPUT_DIR:-$ROOT/_output}
export GOFLAGS="${GOFLAGS:-} -buildvcs=false" GOTOOLCHAIN=${GOTOOLCHAIN:-local}
log() { printf '[parity-images %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
dir=$OUTPUT_DIR/parity-images
mkdir -p "$dir" "$OUTPUT_DIR/bin"
t0=$SECONDS

# The names the e2e framework of the pinned version expects.
declare -A names=()
while read -r id image; do names[$id]=$image; done < <(cd hack/parity-images && go run imagenames.go) ||
  die "could not print the e2e image names (cd hack/parity-images && go run imagenames.go): the Go module proxy must serve k8s.io/kubernetes"
for id in agnhost agnhost-prev busybox; do
  [[ -n ${names[$id]:-} ]] || die "hack/parity-images/imagenames.go printed no $id image"
done
log "images: ${names[agnhost]} ${names[agnhost-prev]} ${names[busybox]} (pause: ${names[pause]}, preloaded in the node image)"

(cd hack/ociimage && nice -n 19 go build -o "$OUTPUT_DIR/bin/ociimage" .)

# busybox: Debian's busybox-static, unpacked without root (apt-get download, dpkg-deb -x).
rootfs_tar=$dir/busybox-rootfs.tar
if [[ ! -s $rootfs_tar || ${PARITY_IMAGES_REBUILD:-} == 1 ]]; then
  command -v dpkg-deb >/dev/null && command -v apt-get >/dev/null ||
    die "apt-get and dpkg-deb are missing: the busybox image is built from Debian's busybox-static package (a Debian or Ubuntu host)"
  rm -rf "$dir/deb" && mkdir -p "$dir/deb"
  log "apt-get download busybox-static"
  (cd "$dir/deb" && apt-get download busybox-static >"$dir/apt.log" 2>&1) ||
    { [[ $(id -u) == 0 ]] && apt-get update >>"$dir/apt.log" 2>&1 && (cd "$dir/deb" && apt-get download busybox-static >>"$dir/apt.log" 2>&1); } ||
    die "apt-get download busybox-static failed (see $dir/apt.log; as root: apt-get update first)"
  dpkg-deb -x "$dir"/deb/busybox-static_*.deb "$dir/deb/x"
  bb=$dir/deb/x/bin/busybox
  [[ -x $bb ]] || die "busybox-static has no /bin/busybox"
  rm -rf "$dir/rootfs" && mkdir -p "$dir/rootfs/bin" "$dir/rootfs/tmp" "$dir/rootfs/etc" "$dir/rootfs/usr/bin"
  cp "$bb" "$dir/rootfs/bin/busybox"
  chmod 1777 "$dir/rootfs/tmp"
  printf 'root:x:0:0:root:/root:/bin/sh\nuser-defined-in-image:x:1000:1000::/home:/bin/sh\n' >"$dir/rootfs/etc/passwd"
  printf 'root:x:0:\ngroup-defined-in-image:x:50000:user-defined-in-image\n' >"$dir/rootfs/etc/group"
  n=0
  for applet in $("$bb" --list); do
    [[ $applet == busybox || -e $dir/rootfs/bin/$applet ]] && continue
    ln -s busybox "$dir/rootfs/bin/$applet"
    n=$((n + 1))
  done
  for applet in sh mv ls sleep test cat; do
    [[ -L $dir/rootfs/bin/$applet ]] || die "busybox-static lacks the applet $applet the specs call"
  done
  tar --numeric-owner --owner=0 --group=0 -C "$dir/rootfs" -cf "$rootfs_tar" .
  log "busybox root filesystem: $n applets ($("$bb" 2>&1 | head -1 | cut -c1-40))"
fi

# ociimage writes one name per archive: one archive per tag.
pack() { # NAME OUT ARGS...
  local image=$1 out=$2; shift 2
  "$OUTPUT_DIR/bin/ociimage" -name "$image" -out "$out" -base "$rootfs_tar" "$@"
}
busybox_tar=$dir/busybox.tar
[[ -s $busybox_tar && ${PARITY_IMAGES_REBUILD:-} != 1 ]] ||
  pack "${names[busybox]}" "$busybox_tar" -cmd sh

agnhost_bin=$dir/agnhost
if [[ ! -x $agnhost_bin || ${PARITY_IMAGES_REBUILD:-} == 1 ]]; then
  log "go build (static) k8s.io/kubernetes/test/images/agnhost (hack/parity-images/go.mod)"
  (cd hack/parity-images && CGO_ENABLED=0 nice -n 19 go build -trimpath -ldflags '-s -w' -o "$agnhost_bin" k8s.io/kubernetes/test/images/agnhost) ||
    die "building agnhost failed: the Go module proxy must serve k8s.io/kubernetes and its dependencies (hack/parity-images/go.sum)"
fi
# Upstream's image has porter's certificate and key at / (its Dockerfile's
# ADD): test-webserver serves / and the StatefulSet fixtures' readiness probe
# GETs /localhost.crt (test/e2e/framework/statefulset), so they must be there.
porter=$(cd hack/parity-images && go list -f '{{.Dir}}' k8s.io/kubernetes/test/images/agnhost/porter)
[[ -f $porter/localhost.crt && -f $porter/localhost.key ]] || die "no localhost.crt/localhost.key in $porter (agnhost's porter)"
for id in agnhost agnhost-prev; do
  out=$dir/$id.tar
  [[ -s $out && $out -nt $agnhost_bin && $out -nt $0 && ${PARITY_IMAGES_REBUILD:-} != 1 ]] ||
    pack "${names[$id]}" "$out" -file "$agnhost_bin:/agnhost" -file "$porter/localhost.crt:/localhost.crt:0644" \
      -file "$porter/localhost.key:/localhost.key:0644" -entrypoint /agnhost -cmd pause
done
log "done in $((SECONDS - t0))s"
echo "$dir/agnhost.tar"
echo "$dir/agnhost-prev.tar"
echo "$busybox_tar"
