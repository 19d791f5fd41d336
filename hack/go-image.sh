#!/usr/bin/env bash
# A Go command's image without a registry or `docker build`: the command built
# static (CGO_ENABLED=0) and packed alone on an empty base by hack/ociimage
# (go-containerregistry), entrypoint the binary.
#
#   hack/go-image.sh IMAGE MODULE_DIR PACKAGE USER
#
# e.g. hack/go-image.sh localhost/was-dra-driver:dev hack/dradriver . 0:0
# Writes $OUTPUT_DIR/kind-image/images-extra/<binary>.tar (for `docker load` or
# `kind load image-archive`) and prints its path.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
(($# == 4)) || { echo "usage: $0 IMAGE MODULE_DIR PACKAGE USER" >&2; exit 2; }
image=$1 module=$2 pkg=$3 user=$4
OUTPUT_DIR=${OUTPUT_DIR:-$ROOT/_output}
export GOFLAGS="${GOFLAGS:-} -buildvcs=false" GOTOOLCHAIN=${GOTOOLCHAIN:-local}
log() { printf '[go-image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
dir=$OUTPUT_DIR/kind-image
mkdir -p "$dir/images-extra"
name=$(basename "$(cd "$module" && go list -f '{{.ImportPath}}' "$pkg")")
t0=$SECONDS
log "go build (static) $module: $pkg"
(cd "$module" && CGO_ENABLED=0 nice -n 19 go build -trimpath -ldflags '-s -w' -o "$dir/$name" "$pkg")
(cd hack/ociimage && nice -n 19 go build -o "$OUTPUT_DIR/bin/ociimage" .)
out=$dir/images-extra/$name.tar
# GO_IMAGE_OCI=1: an OCI layout archive, whose manifest the node stores as is,
# and its digest in $out.digest (for a digest-pinned install).
oci=()
[[ ${GO_IMAGE_OCI:-} == 1 ]] && oci=(-oci -digest-file "$out.digest")
"$OUTPUT_DIR/bin/ociimage" -name "$image" -out "$out" -user "$user" -file "$dir/$name:/$name" -entrypoint "/$name" "${oci[@]}"
log "$image -> $out in $((SECONDS - t0))s"
echo "$out"
