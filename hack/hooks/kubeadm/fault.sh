#!/usr/bin/env bash
# The --fault-command hook of a kubeadm cluster (kind is one), the protocol
# of docs/vendor-guide.md:
#
#   FAULT_COMMAND=hack/hooks/kubeadm/fault.sh \
#     make conformance KUBECONFIG=... ALLOW_DISRUPTIVE=1
#
# Called as: fault.sh <action> [<target>] (or with WAS_FAULT_ACTION and
# WAS_FAULT_TARGET):
#   restart etcd|kube-apiserver|kube-controller-manager|kube-scheduler
#          `crictl stop` of that static pod's container on each control-plane
#          node in turn (through NODE_EXEC, default `docker exec -i {node}`);
#          returns once the kubelet runs a new one, ready, and /readyz answers;
#   restart control-plane
#          each control-plane node stopped and started (NODE_CONTROL, default
#          `docker {action} {node}`: a kind node's container); returns once
#          its static pods, the Node and the implementation's pods there run
#          again and the controllers lead;
#   stop-node NODE / start-node NODE
#          NODE_CONTROL's stop / start; start returns once the Node is Ready;
#   compact-etcd
#          etcd compacted up to its current revision (etcdctl in the etcd
#          container, else etcd's JSON gateway from this machine);
#   check [ACTION]
#          changes nothing: exit 0 when this hook can work here (can do ACTION).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
HARNESS=${HARNESS:-$ROOT/_output/bin/was-harness}
[[ -x $HARNESS ]] || { echo "$0: $HARNESS is missing: run 'make tools' (or set HARNESS=)" >&2; exit 1; }
if (($# > 0)); then
  action=$1 target=${2:-}
else
  action=${WAS_FAULT_ACTION:-} target=${WAS_FAULT_TARGET:-}
fi
case $action in
  restart | stop-node | start-node | compact-etcd | check) exec "$HARNESS" kubeadm fault "$action" "$target" ;;
  *) echo "usage: $0 restart COMPONENT|control-plane | stop-node NODE | start-node NODE | compact-etcd | check [ACTION] (or WAS_FAULT_ACTION, WAS_FAULT_TARGET); got '$action'" >&2; exit 2 ;;
esac
