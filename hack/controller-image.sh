#!/usr/bin/env bash
# The reference implementation's image without a registry or `docker build`:
# was-controller-manager built static (CGO_ENABLED=0) and packed by
# hack/ociimage (go-containerregistry) as build/Dockerfile's final stage
# would: /was-controller-manager, user 65532:65532 (distroless nonroot).
# Writes the image archive $OUTPUT_DIR/kind-image/images-extra/was-controller-manager.tar
# (for `kind load image-archive`) and prints its path.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
OUTPUT_DIR=${OUTPUT_DIR:-$ROOT/_output}
IMAGE=${IMAGE:-localhost/was-controller-manager:dev} # the name deploy/ uses
export GOFLAGS="${GOFLAGS:-} -buildvcs=false" GOTOOLCHAIN=${GOTOOLCHAIN:-local}
log() { printf '[controller-image %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
dir=$OUTPUT_DIR/kind-image
mkdir -p "$dir/images-extra"
t0=$SECONDS
log "go build (static) ./controllers/cmd/was-controller-manager"
CGO_ENABLED=0 nice -n 19 go build -trimpath -o "$dir/was-controller-manager" ./controllers/cmd/was-controller-manager
(cd hack/ociimage && nice -n 19 go build -o "$OUTPUT_DIR/bin/ociimage" .)
out=$dir/images-extra/was-controller-manager.tar
"$OUTPUT_DIR/bin/ociimage" -name "$IMAGE" -out "$out" -user 65532:65532 \
  -file "$dir/was-controller-manager:/was-controller-manager" -entrypoint /was-controller-manager
log "$IMAGE -> $out in $((SECONDS - t0))s"
echo "$out"
