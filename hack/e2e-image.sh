#!/usr/bin/env bash
# The suite image (build/e2e.Dockerfile: the Sonobuoy plugin) without a
# registry or `docker build`: e2e.test and testplan-report built static
# (CGO_ENABLED=0) and sonobuoy/run.sh, packed by hack/ociimage on the Debian
# root filesystem of hack/kind-image.sh (run.sh needs a POSIX shell and
# coreutils, which distroless:debug's busybox gives the Dockerfile's image).
# Writes $OUTPUT_DIR/kind-image/images-extra/was-e2e.tar, loadable with
# `docker load` or `kind load image-archive`; prints its path.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
OUTPUT_DIR=${OUTPUT_DIR:-$ROOT/_output}
E2E_IMAGE=${E2E_IMAGE:-localhost/was-e2e:dev}
DEBIAN_SUITE=${DEBIAN_SUITE:-bookworm}
export GOFLAGS="${GOFLAGS:-} -buildvcs=false" GOTOOLCHAIN=${GOTOOLCHAIN:-local}
log() { printf '[e2e-image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
dir=$OUTPUT_DIR/kind-image
rootfs=$(DEBIAN_SUITE=$DEBIAN_SUITE hack/kind-image.sh rootfs-path)
[[ -f $rootfs ]] || { log "no $rootfs: run make kind-image first (it debootstraps the root filesystem)"; exit 2; }
mkdir -p "$dir/images-extra"
t0=$SECONDS
log "go test -c (static) ./suites/e2e and go build ./cmd/testplan-report"
CGO_ENABLED=0 nice -n 19 go test -c -trimpath -tags e2e -o "$dir/e2e.test" ./suites/e2e
CGO_ENABLED=0 nice -n 19 go build -trimpath -o "$dir/testplan-report" ./cmd/testplan-report
(cd hack/ociimage && nice -n 19 go build -o "$OUTPUT_DIR/bin/ociimage" .)
out=$dir/images-extra/was-e2e.tar
nice -n 19 "$OUTPUT_DIR/bin/ociimage" -name "$E2E_IMAGE" -out "$out" -base "$rootfs" -user 65532:65532 \
  -file "$dir/e2e.test:/e2e.test" -file "$dir/testplan-report:/testplan-report" -file "sonobuoy/run.sh:/run.sh:0755" \
  -entrypoint /bin/sh -entrypoint /run.sh
log "$E2E_IMAGE -> $out in $((SECONDS - t0))s"
echo "$out"
