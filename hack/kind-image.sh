#!/usr/bin/env bash
# make kind-image: a kind node image for KUBE_VERSION, built offline from
# Debian's packages and the Go module proxy (no image registry):
#
#   1. binaries: kube-apiserver, kube-controller-manager, kube-scheduler, kubectl
#      and kubelet, kubeadm, kube-proxy (hack/build-binaries.sh, one module and
#      build cache), etcd (its tools), containerd 2.x, crictl, CoreDNS
#      (hack/build-node-binaries.sh), pause (C,
#      from k8s.io/kubernetes's build/pause, static with gcc);
#   2. a Debian bookworm root filesystem (debootstrap) with systemd, runc, CNI
#      plugins, iptables/nftables, mount tools; kind's base-image files
#      (entrypoint, systemd units, containerd config) from the kind module in
#      the Go module cache, laid out as kind's images/base/Dockerfile does;
#   3. `docker import` of that filesystem;
#   4. one image archive per image kubeadm asks for (`kubeadm config images
#      list`), under that exact name, packed with go-containerregistry
#      (hack/ociimage), imported into the node's containerd (ctr images import
#      --no-unpack, as `kind build node-image` does) and committed;
#   5. in the same import, the previous minor's kube-scheduler and
#      kube-controller-manager at SKEW_KUBE_VERSION (default `hack/versions.sh
#      skew`), built and packed as the current ones are (hack/build-binaries.sh
#      with KUBE_BINARIES), under kubeadm's repository names with the skew tag
#      (registry.k8s.io/kube-scheduler:v1.36.3): a hook that rewrites a static
#      pod manifest's image tag runs the older component (the version-skew
#      specs' real 1.36 kube-scheduler, the downgrade path's 1.36
#      kube-controller-manager) with no registry. SKEW_KUBE_VERSION= (empty)
#      builds the image without them.
#
# Output: the docker image $KIND_NODE_IMAGE, labelled with its stamp, the
# name of its pause image (the suite's pod image on kind) and, when it has
# them, the skew images (was-harness.io/skew-images, comma-separated names).
# Cached on the machine, not in the clone: nothing is rebuilt while the
# image's stamp label matches the versions and the scripts that build it, so
# a clean clone (CI) reuses it. The Debian root filesystem is kept in
# $KIND_IMAGE_CACHE with its own stamp (the package list): debootstrap runs once.
# Every heavy step runs under nice/ionice: it takes idle CPU only.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
KUBE_VERSION=${KUBE_VERSION:-$(hack/versions.sh kube)}
# `-`, not `:-`: set and empty means no skew images.
SKEW_KUBE_VERSION=${SKEW_KUBE_VERSION-$(hack/versions.sh skew)}
OUTPUT_DIR=${OUTPUT_DIR:-$ROOT/_output}
KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-localhost/kind-node:$KUBE_VERSION}
KIND_VERSION=${KIND_VERSION:-v0.33.0}
DEBIAN_SUITE=${DEBIAN_SUITE:-bookworm}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# The mirror is plain HTTP: what makes its packages trustworthy is the signed
# Release file, which debootstrap checks against this keyring
# (--force-check-gpg: no keyring, no build).
DEBIAN_KEYRING=${DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
export GOFLAGS="${GOFLAGS:-} -buildvcs=false" GOTOOLCHAIN=${GOTOOLCHAIN:-local}
# What a kind node needs (kind's base Dockerfile, minus network storage,
# fuse-overlayfs and curl); runc and the CNI plugins come from Debian too.
PACKAGES=systemd,systemd-sysv,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,e2fsprogs,ca-certificates,procps,runc,containernetworking-plugins,socat,jq

work=$OUTPUT_DIR/kind-image
KIND_IMAGE_CACHE=${KIND_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/was-harness/kind-image}
images=$work/images
log() { printf '[kind-image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '[kind-image] ERROR: %s\n' "$*" >&2; exit 1; }
idle() { nice -n 19 ionice -c3 "$@"; }
t_start=$SECONDS

rootfs_tar=$KIND_IMAGE_CACHE/rootfs-$DEBIAN_SUITE.tar
# `hack/kind-image.sh rootfs-path`: where the Debian root filesystem is kept
# (hack/e2e-image.sh packs the suite's image on it).
if [[ ${1:-} == rootfs-path ]]; then echo "$rootfs_tar"; exit 0; fi

[[ $(id -u) == 0 ]] || die "building the node image needs root (debootstrap, chroot-free file ownership)"
docker info >/dev/null 2>&1 || die "no running Docker: start one (hack/container-engine.sh up)"
if [[ $SKEW_KUBE_VERSION == "$KUBE_VERSION" ]]; then
  log "SKEW_KUBE_VERSION is KUBE_VERSION ($KUBE_VERSION): no separate skew images"; SKEW_KUBE_VERSION=
fi
# The older components the skew images carry (hack/build-binaries.sh KUBE_BINARIES).
SKEW_COMPONENTS="kube-scheduler kube-controller-manager"

# The stamp: versions, and everything that decides the image's content.
scripts=$(cat "${BASH_SOURCE[0]}" hack/build-binaries.sh hack/build-node-binaries.sh hack/ociimage/go.mod hack/ociimage/*.go | sha256sum | cut -c1-16)
stamp="kube=$KUBE_VERSION skew=${SKEW_KUBE_VERSION:-none} kind=$KIND_VERSION debian=$DEBIAN_SUITE scripts=$scripts"
STAMP_LABEL=was-harness.io/kind-image-stamp
if [[ "$(docker image inspect -f "{{index .Config.Labels \"$STAMP_LABEL\"}}" "$KIND_NODE_IMAGE" 2>/dev/null)" == "$stamp" ]]; then
  log "$KIND_NODE_IMAGE up to date (label $STAMP_LABEL: $stamp)"; exit 0
fi
mkdir -p "$work" "$images" "$KIND_IMAGE_CACHE"

# --- 1. binaries ---------------------------------------------------------------
log "binaries (cached by their own stamps)"
idle hack/build-binaries.sh >&2
idle hack/build-binaries.sh node >&2
idle hack/build-node-binaries.sh >&2
if [[ -n $SKEW_KUBE_VERSION ]]; then
  # Its own stamp holds the binary list: e2e.sh's KUBE_BINARIES=kube-scheduler
  # and this list relink each other's set when they alternate (5 s, warm cache).
  idle env KUBE_VERSION="$SKEW_KUBE_VERSION" KUBE_BINARIES="$SKEW_COMPONENTS" hack/build-binaries.sh kube >&2
fi
cp_bin=$OUTPUT_DIR/bin/kube/$KUBE_VERSION
skew_bin=$OUTPUT_DIR/bin/kube/$SKEW_KUBE_VERSION
node_bin=$OUTPUT_DIR/bin/kind-node/$KUBE_VERSION
etcd_bin=$OUTPUT_DIR/bin/tools/etcd
kube_mod=$(cd /tmp && go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"Dir": *"\([^"]*\)".*/\1/p')
kind_mod=$(cd /tmp && go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | sed -n 's/.*"Dir": *"\([^"]*\)".*/\1/p')
[[ -d $kube_mod && -d $kind_mod ]] || die "k8s.io/kubernetes@$KUBE_VERSION or sigs.k8s.io/kind@$KIND_VERSION not in the module cache"
pause_version=$(sed -n 's/^[[:space:]]*PauseVersion = "\(.*\)"$/\1/p' "$kube_mod/cmd/kubeadm/app/constants/constants.go")
log "pause $pause_version (gcc -static, $kube_mod/build/pause/linux/pause.c)"
idle gcc -Os -Wall -static -DVERSION="v$pause_version" -o "$work/pause" "$kube_mod/build/pause/linux/pause.c"
(cd hack/ociimage && idle go build -o "$OUTPUT_DIR/bin/ociimage" .)
ociimage=$OUTPUT_DIR/bin/ociimage

# --- 2. root filesystem --------------------------------------------------------
rootfs_stamp="suite=$DEBIAN_SUITE packages=$PACKAGES"
if [[ -f $rootfs_tar && -f $rootfs_tar.stamp && "$(cat "$rootfs_tar.stamp")" == "$rootfs_stamp" ]]; then
  log "Debian $DEBIAN_SUITE root filesystem cached ($rootfs_tar)"
else
  if ! command -v debootstrap >/dev/null; then
    # apt's output goes to a file: on a fresh machine it is a page of progress
    # lines in the CI log. A stale package index is refreshed once on failure.
    log "installing Debian's debootstrap (apt-get; log: $work/apt.log)"
    { idle env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap ||
      { idle apt-get update && idle env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap; }
    } >"$work/apt.log" 2>&1 || die "debootstrap is missing and apt-get cannot install it; see $work/apt.log"
  fi
  [[ -r $DEBIAN_KEYRING ]] ||
    die "$DEBIAN_KEYRING is missing: debootstrap checks the mirror's signed Release file against it (apt-get install debian-archive-keyring, or set DEBIAN_KEYRING)"
  log "debootstrap $DEBIAN_SUITE from $DEBIAN_MIRROR, its Release signature checked against $DEBIAN_KEYRING (a few minutes, once)"
  t0=$SECONDS
  rm -rf "$work/rootfs.tmp"
  idle debootstrap --variant=minbase --keyring="$DEBIAN_KEYRING" --force-check-gpg --include="$PACKAGES" "$DEBIAN_SUITE" "$work/rootfs.tmp" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 ||
    die "debootstrap failed; see $work/debootstrap.log"
  rm -rf "$work/rootfs.tmp"/var/cache/apt/archives/*.deb "$work/rootfs.tmp"/var/lib/apt/lists/*
  idle tar -C "$work/rootfs.tmp" --numeric-owner -cf "$rootfs_tar.new" .
  mv -f "$rootfs_tar.new" "$rootfs_tar"
  echo "$rootfs_stamp" >"$rootfs_tar.stamp"
  rm -rf "$work/rootfs.tmp"
  log "root filesystem in $((SECONDS - t0))s"
fi

# --- 3. the node's file system: Debian + kind's base files + our binaries ------
log "assembling the node file system (kind's base files from $kind_mod/images/base/files)"
node=$work/node
rm -rf "$node"; mkdir -p "$node"
tar -C "$node" --numeric-owner -xf "$rootfs_tar"
files=$kind_mod/images/base/files
install -m 0755 "$files"/usr/local/bin/* "$node/usr/local/bin/"
mkdir -p "$node/kind/bin" "$node/etc/containerd" "$node/etc/default" "$node/etc/sysctl.d" \
  "$node/etc/systemd/system/kubelet.service.d" "$node/etc/kubernetes/manifests" "$node/opt/cni/bin" "$node/LICENSES"
cp "$files"/kind/*.txt "$node/kind/" && chmod 0644 "$node"/kind/*.txt
install -m 0755 "$files"/kind/bin/* "$node/kind/bin/"
install -m 0644 "$files"/etc/crictl.yaml "$node/etc/"
install -m 0644 "$files"/etc/containerd/* "$node/etc/containerd/"
install -m 0644 "$files"/etc/default/* "$node/etc/default/"
install -m 0644 "$files"/etc/sysctl.d/* "$node/etc/sysctl.d/"
find "$files/etc/systemd/system" -maxdepth 1 -type f -exec install -m 0644 {} "$node/etc/systemd/system/" \;
install -m 0644 "$files"/etc/systemd/system/kubelet.service.d/* "$node/etc/systemd/system/kubelet.service.d/"
# kind's Dockerfile: drop the services a node container must not run.
find "$node/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
rm -f "$node"/lib/systemd/system/multi-user.target.wants/* "$node"/etc/systemd/system/*.wants/* \
  "$node"/lib/systemd/system/local-fs.target.wants/* "$node"/lib/systemd/system/sockets.target.wants/*udev* \
  "$node"/lib/systemd/system/sockets.target.wants/*initctl* "$node"/lib/systemd/system/basic.target.wants/*
echo "ReadKMsg=no" >>"$node/etc/systemd/journald.conf"
[[ -e $node/sbin/init ]] || ln -s /usr/lib/systemd/systemd "$node/sbin/init"
systemctl --root="$node" enable kubelet.service containerd.service undo-mount-hacks.service >/dev/null 2>&1 ||
  die "systemctl --root enable failed"
systemctl --root="$node" mask systemd-binfmt.service >/dev/null 2>&1
# Binaries where kind's units and `kind build node-image` put them.
install -m 0755 "$node_bin"/{containerd,containerd-shim-runc-v2,ctr,crictl} "$node/usr/local/bin/"
install -m 0755 "$cp_bin"/{kubelet,kubeadm,kubectl} "$node/usr/bin/"
# The Kubernetes binaries use cgo (glibc) like the local cluster's, to share
# its build cache: they must run against this root filesystem's glibc.
chroot "$node" /usr/bin/kubelet --version >/dev/null 2>&1 || die "kubelet does not run in the Debian $DEBIAN_SUITE root filesystem \
($(chroot "$node" /usr/bin/kubelet --version 2>&1 | tail -1)): the host's glibc is newer than $DEBIAN_SUITE's; set DEBIAN_SUITE to the host's release"
[[ -x $node/usr/sbin/runc ]] && ln -sf /usr/sbin/runc "$node/usr/local/sbin/runc"
for p in host-local loopback ptp portmap bridge; do cp "$node/usr/lib/cni/$p" "$node/opt/cni/bin/"; done
"$node_bin/ctr" oci spec | jq '.hooks.createContainer[.hooks.createContainer| length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
  jq 'del(.process.rlimits)' >"$node/etc/containerd/cri-base.json"
sed -i "s|sandbox_image = .*|sandbox_image = \"registry.k8s.io/pause:$pause_version\"|" "$node/etc/containerd/config.toml"
# Pods get negative oom_score_adj (the sandbox -998); setting one needs
# CAP_SYS_RESOURCE, which a node lacks where the host's bounding set does (our
# VM sandbox; rootless kind too): runc then fails every sandbox with "can't get
# final child's PID from pipe: EOF". Clamping to containerd's own score (what
# kind does rootless) is harmless elsewhere: the suites do not test OOM order.
sed -i "s|restrict_oom_score_adj = false|restrict_oom_score_adj = true|" "$node/etc/containerd/config.toml"
grep -q 'restrict_oom_score_adj = true' "$node/etc/containerd/config.toml" || die "kind's containerd config changed: no restrict_oom_score_adj to set"
echo "$KUBE_VERSION" >"$node/kind/version"

# (kind's STOPSIGNAL SIGRTMIN+3 is not a change `docker import` takes: kind
# removes nodes with docker rm -f, which needs none.)
log "docker import of the node file system"
base_image=localhost/kind-node-base:$KUBE_VERSION
idle tar -C "$node" --numeric-owner -cf - . | docker import \
  --change 'ENV container=docker' \
  --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' - "$base_image" >/dev/null

# --- 4. the images kubeadm asks for ----------------------------------------------
mapfile -t wanted < <("$cp_bin/kubeadm" config images list --kubernetes-version "$KUBE_VERSION")
log "kubeadm config images list: ${wanted[*]}"
rm -f "$images"/*.tar
pack() { # name out-file args...
  local ref=$1 out=$2; shift 2
  idle "$ociimage" -name "$ref" -out "$images/$out" "$@"
}
declare -A repo_of=() # component -> kubeadm's repository for it
for ref in "${wanted[@]}"; do
  repo=${ref%:*}; comp=${repo##*/}; repo_of[$comp]=$repo
  case $comp in
    # hack/build-binaries.sh links these (and etcd) against the host's glibc
    # (cgo): on an empty base the kubelet reported "exec
    # /usr/local/bin/kube-apiserver: no such file or directory" (no dynamic
    # loader). The Debian root filesystem has the matching glibc, and its
    # layer is stored once in the node's containerd however many images use it.
    kube-apiserver | kube-controller-manager | kube-scheduler)
      pack "$ref" "$comp.tar" -base "$rootfs_tar" -file "$cp_bin/$comp:/usr/local/bin/$comp" ;;
    kube-proxy)
      # kube-proxy runs iptables/nft, which are not Go: the Debian root filesystem is its base.
      pack "$ref" kube-proxy.tar -base "$rootfs_tar" -file "$cp_bin/kube-proxy:/usr/local/bin/kube-proxy" ;;
    etcd) pack "$ref" etcd.tar -base "$rootfs_tar" -file "$etcd_bin:/usr/local/bin/etcd" ;;
    pause) pause_ref=$ref; pack "$ref" pause.tar -file "$work/pause:/pause" -entrypoint /pause -user 65535:65535 ;;
    coredns) pack "$ref" coredns.tar -file "$node_bin/coredns:/coredns" -entrypoint /coredns ;;
    *) die "kubeadm asks for $ref, which this script does not build" ;;
  esac
done

# --- 5. the previous minor's kube-scheduler and kube-controller-manager ----------
# Same repository as kubeadm's image of the component, so a static pod switches
# by its tag alone; same base and cgo build as above.
skew_refs=()
for comp in ${SKEW_KUBE_VERSION:+$SKEW_COMPONENTS}; do
  [[ -n ${repo_of[$comp]:-} ]] || die "kubeadm asks for no $comp image: no repository to name its $SKEW_KUBE_VERSION image after"
  got=$("$skew_bin/$comp" --version 2>&1) || die "$skew_bin/$comp --version failed: $got"
  [[ $got == "Kubernetes $SKEW_KUBE_VERSION" ]] || die "$skew_bin/$comp reports \"$got\", not $SKEW_KUBE_VERSION"
  ref=${repo_of[$comp]}:$SKEW_KUBE_VERSION
  pack "$ref" "$comp-$SKEW_KUBE_VERSION.tar" -base "$rootfs_tar" -file "$skew_bin/$comp:/usr/local/bin/$comp"
  skew_refs+=("$ref")
done
[[ ${#skew_refs[@]} -gt 0 ]] && log "skew images: ${skew_refs[*]}"

log "preloading the images into the node's containerd (ctr images import --no-unpack)"
cid=$(docker run -d --privileged --entrypoint sleep -v "$images:/kind/images:ro" "$base_image" infinity)
trap 'docker rm -f "$cid" >/dev/null 2>&1 || true' EXIT
preloaded=$(docker exec "$cid" bash -c 'nohup containerd >/var/log/containerd-build.log 2>&1 &
  for i in $(seq 30); do [ -S /run/containerd/containerd.sock ] && ctr version >/dev/null 2>&1 && break; sleep 1; done
  for f in /kind/images/*.tar; do
    ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned --all-platforms --no-unpack --digests "$f" >/dev/null
  done
  ctr --namespace=k8s.io images ls -q | grep -v "^sha256:"
  pkill -x containerd; for i in $(seq 30); do pgrep -x containerd >/dev/null || break; sleep 1; done
  rm -f /var/log/containerd-build.log')
printf '%s\n' "$preloaded" >&2
for ref in "${wanted[@]}" "${skew_refs[@]}"; do
  grep -qxF "$ref" <<<"$preloaded" || die "$ref is not in the node's containerd after the import"
done
skew_label=
[[ ${#skew_refs[@]} -gt 0 ]] && skew_label=" was-harness.io/skew-images=\"$(IFS=,; echo "${skew_refs[*]}")\""
old_image=$(docker image inspect -f '{{.Id}}' "$KIND_NODE_IMAGE" 2>/dev/null || true)
docker commit --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' --change 'CMD []' \
  --change "LABEL $STAMP_LABEL=\"$stamp\" was-harness.io/pause-image=$pause_ref$skew_label" \
  "$cid" "$KIND_NODE_IMAGE" >/dev/null
docker rm -f "$cid" >/dev/null; trap - EXIT
docker rmi "$base_image" >/dev/null 2>&1 || true
# The image this one replaces would stay behind untagged (919 MB each; 862 MB without skew images).
[[ -n $old_image && $old_image != "$(docker image inspect -f '{{.Id}}' "$KIND_NODE_IMAGE")" ]] &&
  { docker rmi "$old_image" >/dev/null 2>&1 || log "could not remove the replaced image $old_image"; }
rm -rf "$node" "$images"
log "built $KIND_NODE_IMAGE in $((SECONDS - t_start))s ($(docker image inspect -f '{{.Size}}' "$KIND_NODE_IMAGE" | awk '{printf "%d MB", $1/1e6}'))"
