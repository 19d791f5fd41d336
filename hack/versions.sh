#!/usr/bin/env bash
# Prints the project's Kubernetes versions for the Makefile and the hack
# scripts, from their one source:
#   hack/versions.sh kube   the version of k8s.io/kubernetes in go.mod
#   hack/versions.sh skew   api/cluster's SkewKubeVersion (the previous minor)
# api/cluster/versions_test.go checks both against the Go table.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case ${1:-} in
  kube) cd "$ROOT" && go list -m -f '{{.Version}}' k8s.io/kubernetes ;;
  skew) sed -n 's/^[[:space:]]*SkewKubeVersion = "\(v[^"]*\)"$/\1/p' "$ROOT/api/cluster/versions.go" ;;
  *) echo "usage: $0 kube|skew" >&2; exit 2 ;;
esac
