#!/usr/bin/env bash
# The --controller-restart-command hook of a kubeadm cluster (kind is one)
# running the reference implementation's DaemonSets (deploy/), the protocol
# of docs/vendor-guide.md:
#
#   CONTROLLER_RESTART_COMMAND=hack/hooks/kubeadm/controller-restart.sh \
#     make conformance KUBECONFIG=... ALLOW_DISRUPTIVE=1
#
# Called as: controller-restart.sh stop|start|kill|check (or with the action
# in $WAS_CONTROLLER_ACTION).
#   stop   the controller-manager DaemonSet runs with --controllers= (no
#          controller; kube-controller-manager runs no Deployment, ReplicaSet
#          or StatefulSet controller on these clusters, so nothing repairs
#          what the suite seeds); returns once rolled out;
#   start  back to its own args; returns once a pod of it holds the Lease;
#   kill   SIGKILL to the controller-manager that holds the Lease (through
#          NODE_EXEC and crictl), wherever it is in its writes; returns once
#          the kubelet restarted it (lastState exit 137) and the Lease is held
#          again by another identity (the restarted process, or a standby
#          that took it over);
#   check  changes nothing: exit 0 when this hook can work here.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
HARNESS=${HARNESS:-$ROOT/_output/bin/was-harness}
[[ -x $HARNESS ]] || { echo "$0: $HARNESS is missing: run 'make tools' (or set HARNESS=)" >&2; exit 1; }
action=${1:-${WAS_CONTROLLER_ACTION:-}}
case $action in
  stop | start | kill | check) exec "$HARNESS" kubeadm controllers "$action" ;;
  *) echo "usage: $0 stop|start|kill|check (or WAS_CONTROLLER_ACTION=...); got '$action'" >&2; exit 2 ;;
esac
