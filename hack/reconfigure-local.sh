#!/usr/bin/env bash
# The --reconfigure-command hook of a `make cluster-up` cluster, the same hook
# a vendor writes for theirs (docs/vendor-guide.md):
#
#   RECONFIGURE_COMMAND=hack/reconfigure-local.sh make conformance KUBECONFIG=_output/cluster/kubeconfig ALLOW_DISRUPTIVE=1
#
# Called as: reconfigure-local.sh <component> <feature-gates> <runtime-config>
# [<version> [<flags>]], or reconfigure-local.sh check (before any spec: exit
# 0, changing nothing, when it can restart this cluster's components).
# <flags> ("--name=value ...") go to the component; a <version> runs that
# version's binary of _output/bin/kube/<version>/ (`was-harness cluster
# restart --version`).
# It restarts the component with the cluster's own settings plus exactly the
# given gates and runtime-config (--reset drops what an earlier call set), and
# returns once it is ready again. The implementation's two sides map to the
# reference add-on's processes (controllers/config/localcluster-addon.yaml).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER_DIR=${CLUSTER_DIR:-$ROOT/_output/cluster}
HARNESS=${HARNESS:-$ROOT/_output/bin/was-harness}
# Arguments, or (for RECONFIGURE_COMMAND=<this path>, which gets none from
# `sh -c`) the same values the suite puts in the environment.
if (($# > 0)); then
  component=$1 gates=${2:-} runtime_config=${3:-} version=${4:-} flags=${5:-}
else
  component=${WAS_COMPONENT:?usage: $0 <component> <feature-gates> <runtime-config> [<version> [<flags>]] (or WAS_COMPONENT, WAS_FEATURE_GATES, WAS_RUNTIME_CONFIG, WAS_VERSION, WAS_ARGS)}
  gates=${WAS_FEATURE_GATES:-} runtime_config=${WAS_RUNTIME_CONFIG:-} version=${WAS_VERSION:-} flags=${WAS_ARGS:-}
fi
# check (called once before any spec): change nothing, only see that the
# tool and a running cluster of CLUSTER_DIR are there.
if [[ $component == check ]]; then
  [[ -x $HARNESS ]] || { echo "$0 check: $HARNESS is missing: run 'make tools' (or set HARNESS=)" >&2; exit 1; }
  status=$("$HARNESS" cluster status --dir "$CLUSTER_DIR") || { echo "$0 check: no cluster in $CLUSTER_DIR: run 'make cluster-up' (or set CLUSTER_DIR=)" >&2; exit 1; }
  grep -q ' running ' <<<"$status" || { echo "$0 check: no component of the cluster in $CLUSTER_DIR runs: run 'make cluster-up'" >&2; exit 1; }
  exit 0
fi
case $component in
  implementation-admission) component=${IMPLEMENTATION_ADMISSION:-was-webhook} ;;
  implementation-controllers) component=${IMPLEMENTATION_CONTROLLERS:-was-controller-manager} ;;
esac
args=()
# Another version: that version's binary from hack/build-binaries.sh (which
# make e2e and make binaries build for v1.36.3), with only the given gates;
# was-harness says which build command is missing.
[[ -z $version ]] || args+=(--version "$version" --output-dir "$ROOT/_output")
read -ra words <<<"$flags" # word-split without globbing (--controllers=*,...)
for f in "${words[@]}"; do args+=(--arg "${f#--}"); done
exec "$HARNESS" cluster restart --dir "$CLUSTER_DIR" --component "$component" --reset \
  --feature-gates "$gates" --runtime-config "$runtime_config" "${args[@]}"
