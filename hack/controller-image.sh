#!/usr/bin/env bash
# The reference implementation's image without a registry or `docker build`:
# was-controller-manager packed as build/Dockerfile's final stage would:
# /was-controller-manager, user 65532:65532 (distroless nonroot).
# Prints the path of the image archive (for `kind load image-archive`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec hack/go-image.sh "${IMAGE:-localhost/was-controller-manager:dev}" . ./controllers/cmd/was-controller-manager 65532:65532
