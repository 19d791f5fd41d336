#!/usr/bin/env bash
# The reference implementation's image without a registry or `docker build`:
# was-controller-manager packed as build/Dockerfile's final stage would:
# /was-controller-manager, user 65532:65532 (distroless nonroot).
# Prints the path of the image archive (for `kind load image-archive`), an
# OCI layout whose manifest digest is in <archive>.digest: the node stores
# that manifest as is, named both by tag and by digest, so
# hack/deploy-pinned.sh can install deploy/ with the image pinned by digest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
GO_IMAGE_OCI=1 exec hack/go-image.sh "${IMAGE:-localhost/was-controller-manager:dev}" . ./controllers/cmd/was-controller-manager 65532:65532
