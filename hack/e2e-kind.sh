#!/usr/bin/env bash
# make e2e-kind: run the suites on a kind cluster (needs Docker and kind; the
# local cluster of `make e2e` needs neither).
#   1. create the cluster from kind-config/was-v1.37.yaml (gates, runtime-config
#      and the replaced controllers on the control plane; zone/rack workers),
#      and copy the workers' rack labels to topology.kubernetes.io/rack;
#   2. build the reference implementation's image (build/Dockerfile) and load
#      it into the nodes;
#   3. deploy it (kubectl apply -k deploy/) and wait until both DaemonSets are
#      ready (the webhook is ready once its caBundle is set);
#   4. run the suites against the cluster (hack/e2e.sh with E2E_KUBECONFIG);
#   5. always: `kind export logs` into $ARTIFACTS/kind-logs and delete the cluster.
# KIND_NODE_IMAGE overrides the node image, KIND_CLUSTER_NAME the name,
# KEEP_CLUSTER=1 keeps the cluster afterwards.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
ARTIFACTS=${ARTIFACTS:-$ROOT/_artifacts}
OUTPUT_DIR=${OUTPUT_DIR:-$ROOT/_output}
KIND_CONFIG=${KIND_CONFIG:-$ROOT/kind-config/was-v1.37.yaml}
KIND_CLUSTER_NAME=${KIND_CLUSTER_NAME:-was-e2e}
KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-}
KEEP_CLUSTER=${KEEP_CLUSTER:-}
IMAGE=${IMAGE:-localhost/was-controller-manager:dev} # the name deploy/ uses
RACK_LABEL=was-harness.io/rack                      # kind-config/: the kubelet may not set topology.kubernetes.io/rack
log() { printf '[e2e-kind %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# Fail early, and say what is missing and how to get it.
need() {
  cat >&2 <<MSG
e2e-kind: $1
make e2e-kind needs a running Docker daemon and the kind binary:
  * Docker: https://docs.docker.com/engine/install/ (docker info must succeed)
  * kind:   go install sigs.k8s.io/kind@v0.33.0   (then put \$(go env GOPATH)/bin on PATH)
'make e2e' needs neither: it runs the suites on a local cluster built with Go only.
MSG
  exit 2
}
command -v docker >/dev/null 2>&1 || need "docker not found in PATH"
docker info >/dev/null 2>&1 || need "docker is installed but 'docker info' fails (is the daemon running, may you use it?)"
command -v kind >/dev/null 2>&1 || need "kind not found in PATH"

mkdir -p "$ARTIFACTS" "$OUTPUT_DIR"
KUBECONFIG_FILE=$OUTPUT_DIR/kind-$KIND_CLUSTER_NAME.kubeconfig
kubectl_() { "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

cleanup() {
  local rc=$?
  log "exporting the cluster's logs to $ARTIFACTS/kind-logs"
  kind export logs "$ARTIFACTS/kind-logs" --name "$KIND_CLUSTER_NAME" >/dev/null 2>&1 || log "kind export logs failed"
  if [[ -n $KEEP_CLUSTER ]]; then
    log "KEEP_CLUSTER set: cluster $KIND_CLUSTER_NAME kept (kubeconfig $KUBECONFIG_FILE); delete with: kind delete cluster --name $KIND_CLUSTER_NAME"
  else
    kind delete cluster --name "$KIND_CLUSTER_NAME" >/dev/null 2>&1 || log "kind delete cluster failed"
  fi
  exit "$rc"
}

t0=$SECONDS
log "step 0/5: kubectl and the harness's tools"
make --no-print-directory tools >/dev/null
KUBECTL=$(command -v kubectl || true)
if [[ -z $KUBECTL ]]; then
  hack/build-binaries.sh
  KUBECTL=$OUTPUT_DIR/bin/kube/${KUBE_VERSION:-$(hack/versions.sh kube)}/kubectl
fi

log "step 1/5: kind cluster $KIND_CLUSTER_NAME from $KIND_CONFIG"
trap cleanup EXIT
create=(kind create cluster --name "$KIND_CLUSTER_NAME" --config "$KIND_CONFIG" --kubeconfig "$KUBECONFIG_FILE" --wait 5m)
[[ -n $KIND_NODE_IMAGE ]] && create+=(--image "$KIND_NODE_IMAGE")
"${create[@]}"
for node in $(kubectl_ get nodes -l "$RACK_LABEL" -o name); do
  rack=$(kubectl_ get "$node" -o jsonpath="{.metadata.labels.was-harness\.io/rack}")
  kubectl_ label --overwrite "$node" "topology.kubernetes.io/rack=$rack" >/dev/null
done
kubectl_ get nodes -L topology.kubernetes.io/zone,topology.kubernetes.io/rack

log "step 2/5: image $IMAGE (build/Dockerfile), loaded into the nodes"
docker build -f build/Dockerfile -t "$IMAGE" .
kind load docker-image "$IMAGE" --name "$KIND_CLUSTER_NAME"

log "step 3/5: deploying the reference implementation (kubectl apply -k deploy/)"
kubectl_ apply -k deploy/
for ds in was-controller-manager was-webhook; do
  kubectl_ -n was-system rollout status "daemonset/$ds" --timeout=5m
done
# CoreDNS is a Deployment: it gets pods only now that the reference
# Deployment controller runs, which proves that controller works.
kubectl_ -n kube-system rollout status deployment/coredns --timeout=5m

log "step 4/5: the suites (hack/e2e.sh against $KUBECONFIG_FILE)"
rc=0
E2E_KUBECONFIG=$KUBECONFIG_FILE hack/e2e.sh "$@" || rc=$?
log "step 5/5: logs and cluster deletion (trap); e2e-kind took $((SECONDS - t0))s before teardown"
exit "$rc"
