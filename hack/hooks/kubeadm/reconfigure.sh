#!/usr/bin/env bash
# The --reconfigure-command hook of a kubeadm cluster (kind is one), the
# protocol of docs/vendor-guide.md:
#
#   RECONFIGURE_COMMAND=hack/hooks/kubeadm/reconfigure.sh \
#     make conformance KUBECONFIG=... ALLOW_DISRUPTIVE=1
#
# Called as: reconfigure.sh <component> <feature-gates> <runtime-config> [<version> [<flags>]]
# (or with WAS_COMPONENT, WAS_FEATURE_GATES, WAS_RUNTIME_CONFIG, WAS_VERSION,
# WAS_ARGS), or reconfigure.sh check. kube-apiserver, kube-controller-manager
# and kube-scheduler are static pods: their manifests are rewritten on every
# control-plane node from a pristine copy, through NODE_EXEC (default
# `docker exec -i {node}`: kind; `ssh root@{node}` for others), and the hook
# returns once the mirror pod runs the new settings and /readyz answers.
# implementation-admission and -controllers are the DaemonSets of deploy/
# (IMPLEMENTATION_NAMESPACE, IMPLEMENTATION_ADMISSION,
# IMPLEMENTATION_CONTROLLERS). All-empty settings put a component back as
# installed; `was-harness kubeadm restore` puts back everything.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
HARNESS=${HARNESS:-$ROOT/_output/bin/was-harness}
[[ -x $HARNESS ]] || { echo "$0: $HARNESS is missing: run 'make tools' (or set HARNESS=)" >&2; exit 1; }
if (($# > 0)); then
  set -- "$@" "" "" "" ""
  component=$1 gates=$2 runtime_config=$3 version=$4 flags=$5
else
  component=${WAS_COMPONENT:?usage: $0 <component> <feature-gates> <runtime-config> [<version> [<flags>]] (or WAS_COMPONENT, ...)}
  gates=${WAS_FEATURE_GATES:-} runtime_config=${WAS_RUNTIME_CONFIG:-} version=${WAS_VERSION:-} flags=${WAS_ARGS:-}
fi
exec "$HARNESS" kubeadm reconfigure "$component" "$gates" "$runtime_config" "$version" "$flags"
