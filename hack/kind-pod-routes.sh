#!/usr/bin/env bash
# The pod routes of make e2e-kind's CNI (hack/e2e-kind.sh, kind_cni): every
# running node of kind cluster CLUSTER routes every other node's pod subnet
# through that node's address (the nodes share one container network; there
# is no kindnetd to do it). Idempotent (`ip route replace`).
#
#   hack/kind-pod-routes.sh CLUSTER      (KIND_PROVIDER: docker, or podman)
#
# Routes live in a node's kernel, not in its filesystem: a node container
# stopped and started again (the Fault specs do) has lost them, and until
# they are laid again the control plane cannot answer pods on the other
# nodes (kind, 2026-12-04: the DRA driver's calls to 10.96.0.1 timed out
# after the control-plane node's restart). So this reads nothing from the
# API server, which may itself be starting: each node's subnet is in its CNI
# configuration, its address in the container engine.
set -euo pipefail
cluster=${1:?usage: $0 CLUSTER}
provider=${KIND_PROVIDER:-docker}
conf=/etc/cni/net.d/10-ptp.conflist
mapfile -t nodes < <("$provider" ps --filter "label=io.x-k8s.kind.cluster=$cluster" --format '{{.Names}}' | sort)
((${#nodes[@]} > 0)) || { echo "$0: no running node of kind cluster $cluster" >&2; exit 1; }
declare -A subnet addr
for n in "${nodes[@]}"; do
  subnet[$n]=$("$provider" exec "$n" sed -n 's/.*"subnet": *"\([^"]*\)".*/\1/p' "$conf")
  [[ -n ${subnet[$n]} ]] || { echo "$0: node $n has no pod subnet in $conf" >&2; exit 1; }
  addr[$n]=$("$provider" inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$n")
done
for n in "${nodes[@]}"; do
  for o in "${nodes[@]}"; do
    [[ $o == "$n" ]] || "$provider" exec "$n" ip route replace "${subnet[$o]}" via "${addr[$o]}"
  done
done
