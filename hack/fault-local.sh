#!/usr/bin/env bash
# The --fault-command hook of a `make cluster-up` cluster, the same hook a
# vendor writes for theirs (docs/vendor-guide.md):
#
#   FAULT_COMMAND=hack/fault-local.sh \
#     make conformance KUBECONFIG=_output/cluster/kubeconfig ALLOW_DISRUPTIVE=1
#
# Called as: fault-local.sh <action> [<target>] (or with WAS_FAULT_ACTION and
# WAS_FAULT_TARGET):
#   restart etcd|kube-apiserver|kube-controller-manager|kube-scheduler
#          that process restarted with the same flags (was-harness cluster restart);
#   restart control-plane
#          every process but kwok (the nodes) stopped, then started again:
#          what a restart of a control-plane machine does;
#   stop-node NODE / start-node NODE
#          kwok stops (starts again) acting for NODE: it no longer holds the
#          node's Lease, so nothing heartbeats it or runs its pods, as with a
#          machine that went off (pkg/localcluster StopNode); start returns
#          once the Node is Ready;
#   compact-etcd
#          etcd compacted up to its current revision;
#   check [ACTION]
#          changes nothing: exit 0 when this hook can work here (this hook
#          can do every action on its cluster).
# The suite itself does these on the local cluster it starts (make e2e); this
# hook is for running the suite against a `make cluster-up` cluster in vendor mode.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLUSTER_DIR=${CLUSTER_DIR:-$ROOT/_output/cluster}
HARNESS=${HARNESS:-$ROOT/_output/bin/was-harness}
if (($# > 0)); then
  action=$1 target=${2:-}
else
  action=${WAS_FAULT_ACTION:-} target=${WAS_FAULT_TARGET:-}
fi
cluster() { "$HARNESS" cluster "$1" --dir "$CLUSTER_DIR" "${@:2}"; }
case $action in
  check)
    [[ -x $HARNESS ]] || { echo "$0 check: $HARNESS is missing: run 'make tools' (or set HARNESS=)" >&2; exit 1; }
    status=$(cluster status) || { echo "$0 check: no cluster in $CLUSTER_DIR: run 'make cluster-up' (or set CLUSTER_DIR=)" >&2; exit 1; }
    grep -q '^kwok .* running ' <<<"$status" || { echo "$0 check: the cluster of $CLUSTER_DIR does not run; its status:" >&2; echo "$status" >&2; exit 1; }
    exit 0 ;;
  restart)
    case $target in
      control-plane)
        components=$(cluster status | awk '$2 == "pid" && $1 != "kwok" { print $1 }' | paste -sd, -)
        exec "$HARNESS" cluster restart-together --dir "$CLUSTER_DIR" --component "$components" ;;
      etcd | kube-apiserver | kube-controller-manager | kube-scheduler)
        exec "$HARNESS" cluster restart --dir "$CLUSTER_DIR" --component "$target" ;;
      *) echo "$0 restart: '$target': want etcd, kube-apiserver, kube-controller-manager, kube-scheduler or control-plane" >&2; exit 2 ;;
    esac ;;
  stop-node | start-node)
    [[ -n $target ]] || { echo "$0 $action: which node?" >&2; exit 2; }
    exec "$HARNESS" cluster "$action" --dir "$CLUSTER_DIR" --node "$target" ;;
  compact-etcd) exec "$HARNESS" cluster compact-etcd --dir "$CLUSTER_DIR" ;;
  *) echo "usage: $0 restart COMPONENT|control-plane | stop-node NODE | start-node NODE | compact-etcd | check [ACTION] (or WAS_FAULT_ACTION, WAS_FAULT_TARGET); got '$action'" >&2; exit 2 ;;
esac
