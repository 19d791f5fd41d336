#!/usr/bin/env bash
# The --controller-restart-command hook of a `make cluster-up` cluster, the
# same hook a vendor writes for theirs (docs/vendor-guide.md): the crash specs'
# seed mode stops the implementation's controllers, writes the partial state a
# crash leaves, and starts them again.
#
#   CONTROLLER_RESTART_COMMAND=hack/controller-restart-local.sh \
#     make conformance KUBECONFIG=_output/cluster/kubeconfig ALLOW_DISRUPTIVE=1
#
# Called as: controller-restart-local.sh stop|start (or with the action in
# $WAS_CONTROLLER_ACTION). "stop" restarts the reference's controller manager
# with no controllers (it keeps serving /healthz, so nothing else notices);
# "start" puts back its normal flags. Both return once it is ready again.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER_DIR=${CLUSTER_DIR:-$ROOT/_output/cluster}
HARNESS=${HARNESS:-$ROOT/_output/bin/was-harness}
CONTROLLERS=${IMPLEMENTATION_CONTROLLERS:-was-controller-manager}
action=${1:-${WAS_CONTROLLER_ACTION:-}}
case $action in
  stop) exec "$HARNESS" cluster restart --dir "$CLUSTER_DIR" --component "$CONTROLLERS" --arg controllers= ;;
  start) exec "$HARNESS" cluster restart --dir "$CLUSTER_DIR" --component "$CONTROLLERS" --reset ;;
  *) echo "usage: $0 stop|start (or WAS_CONTROLLER_ACTION=stop|start); got '$action'" >&2; exit 2 ;;
esac
