#!/usr/bin/env bash
# NODE_CONTROL of make e2e-kind (the kubeadm fault hook's stop-node,
# start-node and control-plane restart): stops or starts a kind node's
# container, and after a start lays the pod routes of every node again
# (hack/kind-pod-routes.sh: the CNI of e2e-kind keeps them in the nodes'
# kernels, which a stopped container loses).
#
#   hack/kind-node-control.sh stop|start NODE      (KIND_PROVIDER: docker, or podman)
#
# A kind cluster with its default CNI (kindnetd) needs none of this: there
# `docker {action} {node}` is the whole NODE_CONTROL.
set -euo pipefail
action=${1:?usage: $0 stop|start NODE} node=${2:?usage: $0 stop|start NODE}
provider=${KIND_PROVIDER:-docker}
case $action in
  stop) exec "$provider" stop "$node" ;;
  start)
    "$provider" start "$node"
    cluster=$("$provider" inspect -f '{{index .Config.Labels "io.x-k8s.kind.cluster"}}' "$node")
    exec "$(dirname "${BASH_SOURCE[0]}")/kind-pod-routes.sh" "$cluster" ;;
  *) echo "usage: $0 stop|start NODE; got '$action'" >&2; exit 2 ;;
esac
