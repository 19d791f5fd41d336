#!/usr/bin/env bash
# The --controller-restart-command hook of a `make cluster-up` cluster, the
# same hook a vendor writes for theirs (docs/vendor-guide.md): the crash specs'
# seed mode stops the implementation's controllers, writes the partial state a
# crash leaves, and starts them again.
#
#   CONTROLLER_RESTART_COMMAND=hack/controller-restart-local.sh \
#     make conformance KUBECONFIG=_output/cluster/kubeconfig ALLOW_DISRUPTIVE=1
#
# Called as: controller-restart-local.sh stop|start|kill|check (or with the
# action in $WAS_CONTROLLER_ACTION). "stop" restarts the reference's
# controller manager with no controllers (it keeps serving /healthz, so
# nothing else notices); "start" puts back its normal flags. "kill" sends
# SIGKILL to its recorded process, wherever it is in its writes, and starts
# it again with the same flags, as a kubelet restarts a killed container
# (the Fault specs). All return once it is ready again. "check", once before
# any spec, changes nothing: exit 0 when this hook can do its job here.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER_DIR=${CLUSTER_DIR:-$ROOT/_output/cluster}
HARNESS=${HARNESS:-$ROOT/_output/bin/was-harness}
CONTROLLERS=${IMPLEMENTATION_CONTROLLERS:-was-controller-manager}
action=${1:-${WAS_CONTROLLER_ACTION:-}}
case $action in
  check)
    # Before any spec: change nothing, only see that the tool is there and
    # the cluster of CLUSTER_DIR runs the controllers this hook restarts.
    [[ -x $HARNESS ]] || { echo "$0 check: $HARNESS is missing: run 'make tools' (or set HARNESS=)" >&2; exit 1; }
    status=$("$HARNESS" cluster status --dir "$CLUSTER_DIR") || { echo "$0 check: no cluster in $CLUSTER_DIR: run 'make cluster-up' (or set CLUSTER_DIR=)" >&2; exit 1; }
    grep -q "^$CONTROLLERS .* running " <<<"$status" || { echo "$0 check: $CONTROLLERS does not run in the cluster of $CLUSTER_DIR (set IMPLEMENTATION_CONTROLLERS=); its status:" >&2; echo "$status" >&2; exit 1; }
    exit 0 ;;
  stop) exec "$HARNESS" cluster restart --dir "$CLUSTER_DIR" --component "$CONTROLLERS" --arg controllers= ;;
  start) exec "$HARNESS" cluster restart --dir "$CLUSTER_DIR" --component "$CONTROLLERS" --reset ;;
  kill) exec "$HARNESS" cluster kill --dir "$CLUSTER_DIR" --component "$CONTROLLERS" ;;
  *) echo "usage: $0 stop|start|kill|check (or WAS_CONTROLLER_ACTION=stop|start|kill|check); got '$action'" >&2; exit 2 ;;
esac
