#!/usr/bin/env bash
# make e2e-kind: run the suites on a kind cluster, built offline from source.
#   0. the engine (hack/container-engine.sh: a running Docker/Podman, else
#      Debian's docker.io installed and dockerd started, and stopped again at
#      the end), the kind CLI (pinned, from the Go module proxy), the node
#      image (hack/kind-image.sh, cached) and the reference implementation's
#      image (hack/controller-image.sh);
#   1. create the cluster from kind-config/was-v1.37.yaml, adapted for this
#      node image (the kind config actually used is written to $ARTIFACTS):
#      KIND_WORKERS workers (the first ones of the file), no default CNI
#      (kindnetd does not build from the Go module proxy: ptp + host-local
#      and a route per node instead, see kind_cni), and the kubelet's
#      failCgroupV1: false where the host has cgroup v1 (kubelets >= 1.35
#      refuse it otherwise); copy the workers' rack labels to
#      topology.kubernetes.io/rack; kube-apiserver writes an audit log
#      (kind-config/audit-policy.yaml, pkg/localcluster's policy: who wrote
#      each Workload and PodGroup) into $KIND_AUDIT_DIR on this machine
#      (default $ARTIFACTS/kind-audit, kept with the artifacts; empty: none),
#      which the suite reads as --audit-log (env AUDIT_LOG);
#   2. load the reference implementation's image (kind load image-archive);
#   3. deploy it (kubectl apply -k of deploy/ with the image pinned by digest:
#      hack/deploy-pinned.sh) and wait until both DaemonSets are
#      ready (the webhook is ready once its caBundle is set); install the
#      harness's DRA driver (hack/dradriver: the DRA specs' devices);
#   4. run the suites against the cluster (hack/e2e.sh with E2E_KUBECONFIG),
#      their pods on the preloaded pause image (POD_IMAGE, IfNotPresent);
#   5. always: `kind export logs` into $ARTIFACTS/kind-logs, delete the
#      cluster, stop the engine if step 0 started it.
# Each step's time goes to $ARTIFACTS/kind-times.txt.
# KIND_NODE_IMAGE: use this node image instead of building one (e.g. a
# published kindest/node; then KIND_DEFAULT_CNI=1 keeps kindnetd).
# KIND_CLUSTER_NAME the name, KEEP_CLUSTER=1 keeps the cluster (and engine).
# KIND_SKEW_WORKER=1 adds one worker whose kubelet is the previous minor's
# (SKEW_KUBE_VERSION, hack/kind-worker-image.sh: the node image with that
# kubelet and kubeadm; KIND_SKEW_NODE_IMAGE to use another), tainted
# was-harness.io/kubelet-skew=<version>:NoSchedule so that only the specs
# that look for an older kubelet (label KubeletSkew) place pods there, and
# started with KIND_SKEW_KUBELET_GATES as its --feature-gates (default
# DRAWorkloadResourceClaims=false,GenericWorkload=false, that kubelet's own
# defaults: an upgrade's old kubelet; empty: the cluster's KubeletConfiguration,
# which turns both on).
# ALLOW_DISRUPTIVE=1 runs the Disruptive specs too, through the hooks of any
# kubeadm cluster (hack/hooks/kubeadm: static pod manifests rewritten through
# `docker exec`, the reference's DaemonSets patched; the Fault specs' static
# pod containers restarted, node containers stopped and started); a full run (no
# LABEL_FILTER) then fails on any id that is not PASS, unless ALLOW_SKIP=
# "ID=reason; ..." names it (the report keeps the reason). The crash sweep
# (label CrashSweep) runs only with KIND_CRASH_SWEEP=1.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# A hook's relative path resolves against the caller's directory (hack/e2e.sh).
export WAS_HOOK_DIR=${WAS_HOOK_DIR:-$PWD}
cd "$ROOT"
ARTIFACTS=${ARTIFACTS:-$ROOT/_artifacts}
OUTPUT_DIR=${OUTPUT_DIR:-$ROOT/_output}
export ARTIFACTS OUTPUT_DIR
KIND_CONFIG=${KIND_CONFIG:-$ROOT/kind-config/was-v1.37.yaml}
KIND_CLUSTER_NAME=${KIND_CLUSTER_NAME:-was-e2e}
KIND_WORKERS=${KIND_WORKERS:-3} # kind-config/kindconfig_test.go: DefaultWorkers
KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-}
KIND_DEFAULT_CNI=${KIND_DEFAULT_CNI:-}
KIND_SKEW_WORKER=${KIND_SKEW_WORKER:-}
KIND_SKEW_NODE_IMAGE=${KIND_SKEW_NODE_IMAGE:-}
# `-`, not `:-`: set and empty means the cluster's kubelet gates.
KIND_SKEW_KUBELET_GATES=${KIND_SKEW_KUBELET_GATES-DRAWorkloadResourceClaims=false,GenericWorkload=false}
SKEW_TAINT=was-harness.io/kubelet-skew # framework.OldKubelet tolerates a skew node's taints
# kube-apiserver's audit log: this directory (policy.yaml, audit.log) is
# mounted into the control-plane node at AUDIT_NODE_DIR; `-`: empty turns it off.
KIND_AUDIT_DIR=${KIND_AUDIT_DIR-$ARTIFACTS/kind-audit}
AUDIT_NODE_DIR=/var/lib/was-harness/audit
# kube-apiserver presents a client certificate to the reference's webhook,
# which serves no one else (deploy/webhook.yaml --client-ca-file): this
# directory (a CA of its own, the certificate's kubeconfig and the
# AdmissionConfiguration; `was-harness webhook-client`) is mounted into the
# control-plane node at WEBHOOK_CLIENT_NODE_DIR.
WEBHOOK_CLIENT_NODE_DIR=/etc/kubernetes/was-webhook-client
KEEP_CLUSTER=${KEEP_CLUSTER:-}
# E2E_RUNNER=host runs the suite from this machine (hack/e2e.sh); pod runs
# sonobuoy/run.sh in the suite image as a pod in the cluster, as the Sonobuoy
# plugin does (E2E_TIMEOUT in minutes, e.g. 90m, bounds it).
# E2E_RUNNER=parity runs make parity on the cluster instead (make parity-kind):
# the test images of Kubernetes' sig-apps specs built offline and loaded
# (hack/parity-images.sh), then hack/parity.sh in vendor mode against the
# cluster, the baseline first with stock kube-controller-manager (every
# controller: PARITY_STOCK_ON/OFF, the kubeadm hooks), its report in
# PARITY_DIR (default $ARTIFACTS/parity).
# KIND_DRA_DRIVER=1 (default) installs the harness's DRA driver
# (hack/dradriver), so that the DRA specs have devices on kind; 0 leaves it out
# (they then skip, saying why).
KIND_DRA_DRIVER=${KIND_DRA_DRIVER:-1}
DRA_DRIVER_IMAGE=localhost/was-dra-driver:dev
# make parity-kind's default StorageClass (hack/hostpath-provisioner/deploy.yaml names it).
HOSTPATH_PROVISIONER_IMAGE=localhost/was-hostpath-provisioner:dev
# hack/forger: the install spec's hostile client of the webhook (the suite's
# --forger-image).
export FORGER_IMAGE=${FORGER_IMAGE:-localhost/was-forger:dev}
E2E_RUNNER=${E2E_RUNNER:-host}
ALLOW_DISRUPTIVE=${ALLOW_DISRUPTIVE:-}
[[ $ALLOW_DISRUPTIVE == 1 && ${E2E_RUNNER:-host} == pod ]] && { echo "e2e-kind: ALLOW_DISRUPTIVE=1 needs E2E_RUNNER=host: the hooks run docker exec on this machine" >&2; exit 2; }
E2E_TIMEOUT=${E2E_TIMEOUT:-90m}
E2E_IMAGE=${E2E_IMAGE:-localhost/was-e2e:dev}
[[ $E2E_RUNNER == host || $E2E_RUNNER == pod || $E2E_RUNNER == parity ]] || { echo "e2e-kind: E2E_RUNNER=$E2E_RUNNER: want host, pod or parity" >&2; exit 2; }
[[ $E2E_TIMEOUT =~ ^[0-9]+m$ ]] || { echo "e2e-kind: E2E_TIMEOUT=$E2E_TIMEOUT: want minutes, such as 90m" >&2; exit 2; }
[[ -z $KIND_SKEW_WORKER || $KIND_SKEW_WORKER == 0 || $KIND_SKEW_WORKER == 1 ]] || { echo "e2e-kind: KIND_SKEW_WORKER=$KIND_SKEW_WORKER: want 1 (one worker with the previous minor's kubelet) or 0" >&2; exit 2; }
[[ $KIND_SKEW_WORKER == 1 ]] || KIND_SKEW_WORKER=
IMAGE=${IMAGE:-localhost/was-controller-manager:dev} # the name deploy/ uses
RACK_LABEL=was-harness.io/rack                      # kind-config/: the kubelet may not set topology.kubernetes.io/rack
log() { printf '[e2e-kind %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# Fail early, and say what is missing and how to get it.
need() {
  cat >&2 <<MSG
e2e-kind: $1
make e2e-kind needs a container engine and Go:
  * a running Docker or Podman (docker info must succeed), or root on Debian:
    then it installs Debian's docker.io and starts dockerd itself;
  * Go: the kind CLI (sigs.k8s.io/kind@v0.33.0), the node image's binaries and
    images are built from the Go module proxy (no image registry is used).
'make e2e' needs neither: it runs the suites on a local cluster built with Go only.
MSG
  exit 2
}
command -v go >/dev/null 2>&1 || need "go not found in PATH"
t0=$SECONDS
step_t0=$SECONDS
log "step 0/5: container engine, kind, node image, controller image"
engine_started=
provider=$(hack/container-engine.sh up) || need "no container engine (see above)"
[[ -f $OUTPUT_DIR/engine/dockerd.pid ]] && engine_started=1
# Until the cluster exists, a failure only has the engine to stop.
[[ -n $engine_started && -z $KEEP_CLUSTER ]] && trap 'hack/container-engine.sh down' EXIT
[[ $provider == podman ]] && export KIND_EXPERIMENTAL_PROVIDER=podman
mkdir -p "$ARTIFACTS" "$OUTPUT_DIR"
times=$ARTIFACTS/kind-times.txt
: >"$times"
timed() { # record the time of the step that just ended
  printf '%-28s %5ds\n' "$1" $((SECONDS - step_t0)) | tee -a "$times" >&2
  step_t0=$SECONDS
}
timed "engine"
KIND=${KIND:-$(hack/container-engine.sh kind)}
timed "kind CLI"
KUBE_VERSION=${KUBE_VERSION:-$(hack/versions.sh kube)}
export KUBE_VERSION
if [[ -z $KIND_NODE_IMAGE ]]; then
  KIND_NODE_IMAGE=localhost/kind-node:$KUBE_VERSION
  KIND_NODE_IMAGE=$KIND_NODE_IMAGE hack/kind-image.sh
  # The suite's pods run the pause image preloaded in the node image.
  pause=$(docker image inspect -f '{{index .Config.Labels "was-harness.io/pause-image"}}' "$KIND_NODE_IMAGE")
  [[ -n $pause ]] || { log "ERROR: $KIND_NODE_IMAGE has no was-harness.io/pause-image label: rebuild it (make kind-image)"; exit 1; }
  export POD_IMAGE=${POD_IMAGE:-$pause} POD_IMAGE_PULL_POLICY=${POD_IMAGE_PULL_POLICY:-IfNotPresent}
  default_cni=$KIND_DEFAULT_CNI
  if [[ -n $KIND_SKEW_WORKER && -z $KIND_SKEW_NODE_IMAGE ]]; then
    KIND_SKEW_NODE_IMAGE=localhost/kind-node:${SKEW_KUBE_VERSION:=$(hack/versions.sh skew)}-worker
    KIND_NODE_IMAGE=$KIND_NODE_IMAGE KUBELET_VERSION=$SKEW_KUBE_VERSION KIND_WORKER_IMAGE=$KIND_SKEW_NODE_IMAGE hack/kind-worker-image.sh
  fi
else
  default_cni=${KIND_DEFAULT_CNI:-1}
  [[ -n $KIND_SKEW_WORKER && -z $KIND_SKEW_NODE_IMAGE ]] &&
    { log "ERROR: KIND_SKEW_WORKER=1 with KIND_NODE_IMAGE=$KIND_NODE_IMAGE needs KIND_SKEW_NODE_IMAGE, a node image of an older kubelet"; exit 2; }
fi
skew_kubelet=
if [[ -n $KIND_SKEW_WORKER ]]; then
  # The taint's value: the older kubelet's version, as its image says (kind's /kind/version).
  skew_kubelet=$(docker run --rm --entrypoint cat "$KIND_SKEW_NODE_IMAGE" /kind/version)
  log "skew worker: $KIND_SKEW_NODE_IMAGE (kubelet $skew_kubelet, --feature-gates=${KIND_SKEW_KUBELET_GATES:-none, the cluster gates})"
fi
timed "node image"
controller_archive=$(hack/controller-image.sh)
timed "controller image"
forger_archive=$(hack/go-image.sh "$FORGER_IMAGE" hack/forger . 65532:65532)
if [[ $KIND_DRA_DRIVER == 1 ]]; then
  dra_archive=$(hack/go-image.sh "$DRA_DRIVER_IMAGE" hack/dradriver . 0:0)
  timed "DRA driver image"
fi
make --no-print-directory tools >/dev/null
KUBECTL=$OUTPUT_DIR/bin/kube/$KUBE_VERSION/kubectl
[[ -x $KUBECTL ]] || hack/build-binaries.sh kube
timed "tools"

KUBECONFIG_FILE=$OUTPUT_DIR/kind-$KIND_CLUSTER_NAME.kubeconfig
kubectl_() { "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" "$@"; }

metrics_forward=
cleanup() {
  local rc=$?
  step_t0=$SECONDS
  if [[ -n $metrics_forward ]]; then
    kill "$metrics_forward" 2>/dev/null || true
    pkill -f "port-forward ds/was-controller-manager $metrics_port:10290" 2>/dev/null || true
  fi
  # kube-apiserver writes the audit log as root (mode 0600): hand it to the
  # user who ran this, so the artifacts can be read and removed.
  [[ -n $KIND_AUDIT_DIR ]] && "$provider" exec "$KIND_CLUSTER_NAME-control-plane" chown -R "$(id -u):$(id -g)" "$AUDIT_NODE_DIR" >/dev/null 2>&1 || true
  log "exporting the cluster's logs to $ARTIFACTS/kind-logs"
  "$KIND" export logs "$ARTIFACTS/kind-logs" --name "$KIND_CLUSTER_NAME" >/dev/null 2>&1 || log "kind export logs failed"
  timed "export logs"
  if [[ $ALLOW_DISRUPTIVE == 1 && -n $KEEP_CLUSTER && -f $KUBECONFIG_FILE ]]; then
    # A kept cluster is left as installed, whatever a stopped run changed:
    # a node a Fault spec stopped runs again.
    "$KIND" get nodes --name "$KIND_CLUSTER_NAME" 2>/dev/null | xargs -r "$provider" start >/dev/null || log "ERROR: starting the cluster's node containers failed"
    KUBECONFIG=$KUBECONFIG_FILE "$OUTPUT_DIR/bin/was-harness" kubeadm restore || log "ERROR: restoring the cluster's components failed (rerun: KUBECONFIG=$KUBECONFIG_FILE $OUTPUT_DIR/bin/was-harness kubeadm restore)"
  fi
  if [[ -n $KEEP_CLUSTER ]]; then
    log "KEEP_CLUSTER set: cluster $KIND_CLUSTER_NAME kept (kubeconfig $KUBECONFIG_FILE); delete with: $KIND delete cluster --name $KIND_CLUSTER_NAME; then hack/container-engine.sh down"
  else
    "$KIND" delete cluster --name "$KIND_CLUSTER_NAME" >/dev/null 2>&1 || log "kind delete cluster failed"
    timed "delete cluster"
    [[ -n $engine_started ]] && hack/container-engine.sh down
  fi
  log "times: $(tr -s ' ' <"$times" | paste -sd, -)"
  exit "$rc"
}

# run_in_pod runs the suite the way the Sonobuoy plugin does (Sonobuoy itself
# is not served by the Go module proxy): the suite image of build/e2e.Dockerfile,
# built offline by hack/e2e-image.sh, runs sonobuoy/run.sh in a pod under a
# cluster-admin service account, as Sonobuoy's plugin pod would. The pod then
# waits, so that its results directory can be copied out.
E2E_RUNNER_NS=was-e2e-runner
run_in_pod() {
  local archive results=$ARTIFACTS/in-cluster
  archive=$(hack/e2e-image.sh)
  "$KIND" load image-archive "$archive" --name "$KIND_CLUSTER_NAME"
  kubectl_ apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: $E2E_RUNNER_NS}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: was-e2e, namespace: $E2E_RUNNER_NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: was-e2e-runner}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: ServiceAccount, name: was-e2e, namespace: $E2E_RUNNER_NS}]
---
apiVersion: v1
kind: Pod
metadata: {name: was-e2e, namespace: $E2E_RUNNER_NS}
spec:
  serviceAccountName: was-e2e
  restartPolicy: Never
  nodeSelector: {node-role.kubernetes.io/control-plane: ""}
  tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}]
  containers:
  - name: e2e
    image: $E2E_IMAGE
    imagePullPolicy: IfNotPresent
    command: [/bin/sh, -c, '/bin/sh /run.sh "\$@"; touch /tmp/sonobuoy/results/.finished; exec sleep 86400', sh,
      $(pod_args)]
    env: [{name: RESULTS_DIR, value: /tmp/sonobuoy/results}, {name: E2E_TIMEOUT, value: $E2E_TIMEOUT}]
    volumeMounts: [{name: results, mountPath: /tmp/sonobuoy/results}]
  volumes: [{name: results, emptyDir: {}}]
YAML
  kubectl_ -n "$E2E_RUNNER_NS" wait --for=condition=Ready pod/was-e2e --timeout=5m
  log "the suite runs in pod $E2E_RUNNER_NS/was-e2e (follow: kubectl -n $E2E_RUNNER_NS logs -f was-e2e)"
  local deadline=$((SECONDS + 60 * ${E2E_TIMEOUT%m} + 300))
  until kubectl_ -n "$E2E_RUNNER_NS" exec was-e2e -- test -f /tmp/sonobuoy/results/.finished 2>/dev/null; do
    ((SECONDS < deadline)) || { log "the in-cluster suite did not finish within $E2E_TIMEOUT"; return 1; }
    sleep 10
  done
  rm -rf "$results"; mkdir -p "$results"
  kubectl_ -n "$E2E_RUNNER_NS" cp was-e2e:/tmp/sonobuoy/results "$results" >/dev/null
  kubectl_ delete --wait=false namespace "$E2E_RUNNER_NS" >/dev/null; kubectl_ delete clusterrolebinding was-e2e-runner >/dev/null
  log "results of the in-cluster suite in $results: $(ls "$results" | paste -sd' ' -)"
  grep -E "^(Ran |SUCCESS!|FAIL!)" "$results/e2e.log" >&2 || true
  # Ginkgo's last verdict line is the run's result, as its exit code would be.
  grep -q "^SUCCESS!" "$results/e2e.log"
}

# install_storage: a default StorageClass that provisions (the StatefulSet
# specs' volumeClaimTemplates). kind's fallback class "standard" names the
# in-tree kubernetes.io/host-path provisioner, which no longer exists, so
# their claims would stay Pending until upstream's timeouts; and kind's
# local-path-provisioner image cannot be pulled here. The harness's own
# (hack/hostpath-provisioner) replaces it.
install_storage() {
  local archive
  archive=$(hack/go-image.sh "$HOSTPATH_PROVISIONER_IMAGE" hack/hostpath-provisioner . 0:0) ||
    { log "ERROR: building the hostpath provisioner's image failed (hack/go-image.sh)"; return 1; }
  "$KIND" load image-archive "$archive" --name "$KIND_CLUSTER_NAME"
  log "step 4/5: the default StorageClass: kind's fallback \"standard\" replaced by hack/hostpath-provisioner/deploy.yaml"
  kubectl_ delete storageclass standard --ignore-not-found >/dev/null
  kubectl_ apply -f hack/hostpath-provisioner/deploy.yaml
  kubectl_ -n was-storage rollout status daemonset/was-hostpath-provisioner --timeout=5m ||
    { log "ERROR: the hostpath provisioner did not roll out; its logs:"; kubectl_ -n was-storage logs ds/was-hostpath-provisioner --tail=20 >&2 || true; return 1; }
}

# run_parity: make parity against this cluster (E2E_RUNNER=parity). The
# specs' images (agnhost, busybox; pause is preloaded) are built offline by
# hack/parity-images.sh and loaded; the baseline runs stock
# kube-controller-manager's every controller with the reference's stopped
# (PARITY_STOCK_ON), then the reference is back (PARITY_STOCK_OFF: restore
# puts the static pods and the DaemonSets back; controllers start waits
# for the Lease). The hooks find the nodes through NODE_EXEC, as with
# ALLOW_DISRUPTIVE=1.
run_parity() {
  local archives a
  archives=$(hack/parity-images.sh) || { log "ERROR: building the parity test images failed (hack/parity-images.sh)"; return 1; }
  for a in $archives; do
    "$KIND" load image-archive "$a" --name "$KIND_CLUSTER_NAME"
  done
  # pause is the node image's (the specs name imageutils.Pause, as it is tagged there).
  local pause_want
  pause_want=$(cd hack/parity-images && go run imagenames.go | awk '$1 == "pause" {print $2}')
  "$provider" exec "$KIND_CLUSTER_NAME-control-plane" crictl images -o json | grep -q "\"$pause_want\"" ||
    log "WARNING: the node image has no $pause_want (the specs' pause image): rebuild it (make kind-image) or the specs that use it pull and fail"
  timed "parity images"
  install_storage || return 1
  timed "storage"
  local hook="$OUTPUT_DIR/bin/was-harness kubeadm"
  export KIND_PROVIDER=$provider
  export KUBECONFIG=$KUBECONFIG_FILE NODE_EXEC="${NODE_EXEC:-$provider exec -i {node\}}"
  # restore: the static pods pristine and the DaemonSets as installed (so the
  # controllers run again); start then waits until they lead again.
  export PARITY_STOCK_ON=${PARITY_STOCK_ON-"$hook controllers stop && $hook reconfigure kube-controller-manager '' '' '' '--controllers=*,bootstrapsigner,tokencleaner'"}
  export PARITY_STOCK_OFF=${PARITY_STOCK_OFF-"$hook restore && $hook controllers start"}
  # Real kubelets: the specs' pods pull nothing (their images are loaded), but
  # a StatefulSet spec waits on each pod in turn: 2 processes on 2 cores.
  export PROCS=${PROCS:-2}
  export PARITY_DIR=${PARITY_DIR:-$ARTIFACTS/parity}
  log "step 4/5: PARITY_STOCK_ON=$PARITY_STOCK_ON"
  log "step 4/5: PARITY_STOCK_OFF=$PARITY_STOCK_OFF"
  log "step 4/5: hack/parity.sh against $KUBECONFIG_FILE (modes ${PARITY_MODES:-baseline plain basic gang}, report $PARITY_DIR/parity.md)"
  E2E_KUBECONFIG=$KUBECONFIG_FILE hack/parity.sh
}

# The suite's flags in the pod, as YAML flow items: the pod image where set,
# and LABEL_FILTER without the specs that restart components (they need the
# harness's hooks, which a pod lacks).
pod_args() {
  local f=${LABEL_FILTER:-}
  f=${f:+($f) && }'!Disruptive'
  [[ -n ${POD_IMAGE:-} ]] && printf "'--pod-image=%s', " "$POD_IMAGE"
  [[ -n ${POD_IMAGE_PULL_POLICY:-} ]] && printf "'--pod-image-pull-policy=%s', " "$POD_IMAGE_PULL_POLICY"
  printf "'--ginkgo.label-filter=%s'" "$f"
}

# The kind config for this run: was-v1.37.yaml's ClusterConfiguration patch
# and labels, its first KIND_WORKERS workers, and what this node image needs.
# With KIND_SKEW_WORKER=1, every node names its image (kind's --image would
# replace the skew worker's) and one more worker follows the others: the
# older kubelet's image, tainted at registration (kubeadm join's
# nodeRegistration.taints become the kubelet's --register-with-taints, so no
# pod lands there first), its gates given as a kubelet flag (a flag overrides
# the featureGates of the cluster's KubeletConfiguration, which kubeadm join
# downloads and a join configuration cannot patch).
# A second ClusterConfiguration patch gives kube-apiserver its webhook client
# certificate (WEBHOOK_CLIENT_DIR, mounted at WEBHOOK_CLIENT_NODE_DIR) and,
# with KIND_AUDIT_DIR, its audit flags and that directory, mounted at
# AUDIT_NODE_DIR (kind merges extraArgs by name, so the first patch's stay).
kind_config() {
  local cgroup_v1=
  [[ -f /sys/fs/cgroup/cgroup.controllers ]] || cgroup_v1=1
  awk -v workers="$KIND_WORKERS" -v cgv1="$cgroup_v1" -v nocni="$([[ -z $default_cni ]] && echo 1)" \
    -v nodeimg="$([[ -n $KIND_SKEW_WORKER ]] && echo "$KIND_NODE_IMAGE")" -v skewimg="${KIND_SKEW_WORKER:+$KIND_SKEW_NODE_IMAGE}" \
    -v skewver="$skew_kubelet" -v skewgates="$KIND_SKEW_KUBELET_GATES" -v taint="$SKEW_TAINT" \
    -v auditdir="$KIND_AUDIT_DIR" -v auditnode="$AUDIT_NODE_DIR" \
    -v whdir="$WEBHOOK_CLIENT_DIR" -v whnode="$WEBHOOK_CLIENT_NODE_DIR" '
    function skew_worker() {
      done_skew = 1
      print "- role: worker"
      print "  image: " skewimg
      print "  kubeadmConfigPatches:"
      print "  - |"
      print "    apiVersion: kubeadm.k8s.io/v1beta4"
      print "    kind: JoinConfiguration"
      print "    nodeRegistration:"
      print "      taints:"
      print "      - {key: " taint ", value: \"" skewver "\", effect: NoSchedule}"
      if (skewgates != "") {
        print "  kubeadmConfigPatchesJSON6902:"
        print "  - group: kubeadm.k8s.io"
        print "    version: v1beta4"
        print "    kind: JoinConfiguration"
        print "    patch: |"
        print "      - op: add"
        print "        path: /nodeRegistration/kubeletExtraArgs/-"
        print "        value: {name: feature-gates, value: \"" skewgates "\"}"
      }
    }
    # The skew worker goes last in nodes:, before the next top-level key.
    skewimg && in_nodes && /^[a-z]/ && !done_skew { skew_worker(); in_nodes = 0 }
    /^nodes:/ { in_nodes = 1 }
    /^kubeadmConfigPatches:/ {
      print
      if (cgv1) {
        # Kubelets since 1.35 refuse a cgroup v1 host unless told otherwise.
        print "- |"
        print "  apiVersion: kubelet.config.k8s.io/v1beta1"
        print "  kind: KubeletConfiguration"
        print "  failCgroupV1: false"
      }
      print "- |"
      print "  apiVersion: kubeadm.k8s.io/v1beta4"
      print "  kind: ClusterConfiguration"
      print "  apiServer:"
      print "    extraArgs:"
      print "    - {name: admission-control-config-file, value: " whnode "/admission-config.yaml}"
      if (auditdir) {
        print "    - {name: audit-policy-file, value: " auditnode "/policy.yaml}"
        print "    - {name: audit-log-path, value: " auditnode "/audit.log}"
      }
      print "    extraVolumes:"
      print "    - {name: was-webhook-client, hostPath: " whnode ", mountPath: " whnode ", readOnly: true, pathType: Directory}"
      if (auditdir) print "    - {name: was-audit, hostPath: " auditnode ", mountPath: " auditnode ", pathType: Directory}"
      next
    }
    /^- role: worker/ { n++; skip = (n > workers) }
    /^- role: control-plane/ {
      skip = 0
      print
      print "  extraMounts:"
      print "  - {hostPath: \"" whdir "\", containerPath: " whnode ", readOnly: true}"
      if (auditdir) print "  - {hostPath: \"" auditdir "\", containerPath: " auditnode "}"
      next
    }
    /^[a-z]/ && !/^nodes:/ && !/^kubeadmConfigPatches:/ { skip = 0 }
    /^  image: / { if (nodeimg && !skip) print "  image: " nodeimg; next }  # else the node image is --image
    !skip { print }
    END {
      if (skewimg && in_nodes && !done_skew) skew_worker()
      if (nocni) { print "networking:"; print "  disableDefaultCNI: true" }
    }
  ' "$KIND_CONFIG"
}

# A CNI without images, for node images without kindnetd: every node gets a
# ptp + host-local configuration for its podCIDR and a route to every other
# node's podCIDR through that node's address (nodes share one docker network;
# hack/kind-pod-routes.sh, which NODE_CONTROL runs again after a node starts).
kind_cni() {
  local nodes; nodes=$(kubectl_ get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}')
  while read -r name cidr ip; do
    [[ -n $cidr ]] || { log "node $name has no podCIDR yet"; return 1; }
    docker exec -i "$name" sh -c 'mkdir -p /etc/cni/net.d && cat >/etc/cni/net.d/10-ptp.conflist' <<JSON
{"cniVersion": "1.0.0", "name": "kind-ptp", "plugins": [
  {"type": "ptp", "ipMasq": false, "mtu": 1500,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$cidr"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
JSON
  done <<<"$nodes"
  KIND_PROVIDER=$provider "$ROOT/hack/kind-pod-routes.sh" "$KIND_CLUSTER_NAME"
}

log "step 1/5: kind cluster $KIND_CLUSTER_NAME ($KIND_NODE_IMAGE) from $KIND_CONFIG, $KIND_WORKERS workers${KIND_SKEW_WORKER:+ and a worker with kubelet $skew_kubelet ($KIND_SKEW_NODE_IMAGE)}"
trap cleanup EXIT
# A stopped run (Ctrl-C, timeout) still exports the logs, deletes the cluster and stops the engine.
trap 'exit 130' INT
trap 'exit 143' TERM
if [[ -n $KIND_AUDIT_DIR ]]; then
  # A new log per cluster; the policy is the local cluster's (a unit test keeps them equal).
  mkdir -p "$KIND_AUDIT_DIR" && KIND_AUDIT_DIR=$(cd "$KIND_AUDIT_DIR" && pwd)
  rm -f "$KIND_AUDIT_DIR/audit.log"
  cp kind-config/audit-policy.yaml "$KIND_AUDIT_DIR/policy.yaml"
fi
# A new CA and client certificate per cluster, kept out of the artifacts
# (the key is a credential of the cluster).
WEBHOOK_CLIENT_DIR=$OUTPUT_DIR/kind-$KIND_CLUSTER_NAME-webhook-client
rm -rf "$WEBHOOK_CLIENT_DIR"
"$OUTPUT_DIR/bin/was-harness" webhook-client --dir "$WEBHOOK_CLIENT_DIR" --mounted-at "$WEBHOOK_CLIENT_NODE_DIR" --user '*.was-system.svc'
kind_config >"$ARTIFACTS/kind-config.yaml"
create=("$KIND" create cluster --name "$KIND_CLUSTER_NAME" --config "$ARTIFACTS/kind-config.yaml" --kubeconfig "$KUBECONFIG_FILE" --retain)
# --image would override every node's image, the skew worker's too: with it, the config names them.
[[ -z $KIND_SKEW_WORKER ]] && create+=(--image "$KIND_NODE_IMAGE")
[[ -n $default_cni ]] && create+=(--wait 5m)
"${create[@]}"
timed "create cluster"
if [[ -z $default_cni ]]; then
  # kind returns once every kubeadm join is done, which a kubelet's TLS
  # bootstrap ends; its Node can come later (measured: 5 nodes beside another
  # cluster exhausted the host's inotify instances, the kubelets restarted
  # for 2 minutes, and kind_cni configured only the 2 nodes registered by then).
  want=$("$KIND" get nodes --name "$KIND_CLUSTER_NAME" | wc -l)
  for _ in $(seq 150); do
    (($(kubectl_ get nodes -o name | wc -l) >= want)) && break
    sleep 2
  done
  (($(kubectl_ get nodes -o name | wc -l) >= want)) ||
    { log "ERROR: $(kubectl_ get nodes -o name | wc -l) of the $want nodes registered within 5m (the host's fs.inotify.max_user_instances is shared by every kind node)"; exit 1; }
  kind_cni
  kubectl_ wait --for=condition=Ready nodes --all --timeout=5m
  timed "CNI + nodes Ready"
fi
if [[ -n $KIND_AUDIT_DIR ]]; then
  # kube-apiserver creates it at start (mode 0600, its user's): readable here
  # when this runs as root, or the engine maps root to this user (rootless).
  if [[ -r $KIND_AUDIT_DIR/audit.log ]]; then
    export AUDIT_LOG=$KIND_AUDIT_DIR/audit.log
    log "kube-apiserver's audit log: $AUDIT_LOG (the suite's --audit-log)"
  else
    log "WARNING: kube-apiserver's audit log $KIND_AUDIT_DIR/audit.log is not readable here: the specs that attribute writes to their writer will skip"
  fi
fi
for node in $(kubectl_ get nodes -l "$RACK_LABEL" -o name); do
  rack=$(kubectl_ get "$node" -o jsonpath="{.metadata.labels.was-harness\.io/rack}")
  kubectl_ label --overwrite "$node" "topology.kubernetes.io/rack=$rack" >/dev/null
done
kubectl_ get nodes -L topology.kubernetes.io/zone,topology.kubernetes.io/rack

log "step 2/5: image $IMAGE loaded into the nodes ($controller_archive)"
"$KIND" load image-archive "$controller_archive" --name "$KIND_CLUSTER_NAME"
"$KIND" load image-archive "$forger_archive" --name "$KIND_CLUSTER_NAME"
timed "load controller image"

# deploy/ with the image pinned by the digest of what was just built and
# loaded (an overlay in $OUTPUT_DIR; deploy/ itself stays as checked in).
controller_digest=$(<"$controller_archive.digest")
deploy_dir=$(hack/deploy-pinned.sh "$controller_digest")
log "step 3/5: deploying the reference implementation (kubectl apply -k deploy/, image ${IMAGE%:*}@$controller_digest)"
# The webhook verifies the API server's client certificate against this CA
# (docs/install.md: the same step on any cluster).
kubectl_ apply -f deploy/namespace.yaml
kubectl_ -n was-system create configmap was-webhook-client-ca --from-file=ca.crt="$WEBHOOK_CLIENT_DIR/ca.crt" --dry-run=client -o yaml | kubectl_ apply -f -
kubectl_ apply -k "$deploy_dir"
for ds in was-controller-manager was-webhook; do
  kubectl_ -n was-system rollout status "daemonset/$ds" --timeout=5m
done
# CoreDNS is a Deployment: it gets pods only now that the reference
# Deployment controller runs, which proves that controller works.
kubectl_ -n kube-system rollout status deployment/coredns --timeout=5m
timed "deploy"
if [[ $KIND_DRA_DRIVER == 1 ]]; then
  # The DRA specs' devices: the harness's driver on every worker (hack/dradriver).
  log "step 3/5: the harness's DRA driver (hack/dradriver/deploy.yaml, $DRA_DRIVER_IMAGE)"
  "$KIND" load image-archive "$dra_archive" --name "$KIND_CLUSTER_NAME"
  kubectl_ apply -f hack/dradriver/deploy.yaml
  kubectl_ -n was-dra rollout status daemonset/was-dra-driver --timeout=5m
  # The skew worker's too: the driver's DaemonSet tolerates its taint.
  slices=0 workers=$((KIND_WORKERS + ${KIND_SKEW_WORKER:-0}))
  for _ in $(seq 60); do
    slices=$(kubectl_ get resourceslices --field-selector spec.driver=gpu.was-harness.io -o name | wc -l)
    ((slices >= workers)) && break
    sleep 2
  done
  if ((slices < workers)); then
    log "ERROR: the DRA driver published $slices ResourceSlices for $workers workers within 120s; its logs:"
    kubectl_ -n was-dra logs ds/was-dra-driver --tail=20 >&2 || true
    exit 1
  fi
  kubectl_ get resourceslices --field-selector spec.driver=gpu.was-harness.io
  timed "DRA driver"
fi

rc=0
if [[ $E2E_RUNNER == parity ]]; then
  log "step 4/5: make parity on the cluster: the sig-apps specs' test images, then hack/parity.sh (vendor mode)"
  run_parity || rc=$?
elif [[ $E2E_RUNNER == pod ]]; then
  log "step 4/5: the suites in the cluster: sonobuoy/run.sh in the suite image ($E2E_IMAGE), as a pod"
  run_in_pod || rc=$?
else
  if [[ $ALLOW_DISRUPTIVE == 1 ]]; then
    # The kubeadm hooks (they read KUBECONFIG; NODE_EXEC reaches a node's container).
    export RECONFIGURE_COMMAND=${RECONFIGURE_COMMAND:-$ROOT/hack/hooks/kubeadm/reconfigure.sh}
    export CONTROLLER_RESTART_COMMAND=${CONTROLLER_RESTART_COMMAND:-$ROOT/hack/hooks/kubeadm/controller-restart.sh}
    # The Fault specs' faults: static pods' containers restarted, nodes'
    # containers stopped and started (NODE_CONTROL), etcd compacted.
    export FAULT_COMMAND=${FAULT_COMMAND:-$ROOT/hack/hooks/kubeadm/fault.sh}
    # A node started again gets its pod routes back (kind_cni); with
    # kindnetd (KIND_DEFAULT_CNI=1) the engine's start is enough.
    node_control="$ROOT/hack/kind-node-control.sh {action} {node}"
    [[ -n $KIND_DEFAULT_CNI ]] && node_control="$provider {action} {node}"
    export KIND_PROVIDER=$provider
    export KUBECONFIG="$KUBECONFIG_FILE" NODE_EXEC="${NODE_EXEC:-$provider exec -i {node\}}" NODE_CONTROL="${NODE_CONTROL:-$node_control}"
    # The reference runs here (deploy/): its crash points are armed through
    # the reconfigure hook (--crash-after on its DaemonSet), and the crash is
    # seen in the pod's status (exit 86, restartCount).
    export CRASH_MODE=${CRASH_MODE:-crashpoint}
    # A full run proves every id or names why not (ALLOW_SKIP).
    # It takes far longer than make e2e's 60 minutes: each kube-apiserver
    # restart on kind costs about 70 s each way (measured), a webhook
    # rollout 5-10 s; the Serial part ran at about a spec a minute (155
    # specs; the first whole run, 156 specs, took 83 min on 2 cores).
    [[ -z ${LABEL_FILTER:-} ]] && export REPORT_FAIL_ON=${REPORT_FAIL_ON:-FAIL,SKIP,PARTIAL,NOT-IMPLEMENTED,MISSING} GINKGO_TIMEOUT=${GINKGO_TIMEOUT:-180m}
    # The crash sweep (label CrashSweep, suites/upgrade/crashsweep.go) stops
    # the controllers after every write of 13 sequences, about 70 restarts;
    # here each is the DaemonSet pod's, so it runs only when asked
    # (KIND_CRASH_SWEEP=1). D-E6 and S-I8 keep their named crash points.
    if [[ ${KIND_CRASH_SWEEP:-} != 1 ]]; then
      export LABEL_FILTER="${LABEL_FILTER:+($LABEL_FILTER) && }!CrashSweep"
      log "step 4/5: the crash sweep is left out (KIND_CRASH_SWEEP=1 runs it)"
    fi
    log "step 4/5: Disruptive specs included, through $RECONFIGURE_COMMAND, $CONTROLLER_RESTART_COMMAND and $FAULT_COMMAND (NODE_EXEC=$NODE_EXEC, NODE_CONTROL=$NODE_CONTROL)"
    # S-P9's metric is the controllers' own: they serve it on the pod's
    # loopback only (deploy/), which kubectl port-forward reaches. The
    # Disruptive specs restart the apiserver and roll the DaemonSet, which end
    # a port-forward: a loop starts it again (the spec waits out a failed read).
    if [[ -z ${IMPLEMENTATION_METRICS_URL:-} ]]; then
      metrics_port=$((20000 + RANDOM % 20000))
      (while :; do
        kubectl_ -n was-system port-forward ds/was-controller-manager "$metrics_port:10290" >>"$ARTIFACTS/metrics-port-forward.log" 2>&1 || true
        sleep 1
      done) &
      metrics_forward=$!
      export IMPLEMENTATION_METRICS_URL=http://127.0.0.1:$metrics_port/metrics
      log "step 4/5: the controllers' metrics at $IMPLEMENTATION_METRICS_URL (kubectl port-forward, restarted when it ends)"
    fi
  fi
  log "step 4/5: the suites (hack/e2e.sh against $KUBECONFIG_FILE; pod image ${POD_IMAGE:-default})"
  E2E_KUBECONFIG=$KUBECONFIG_FILE hack/e2e.sh "$@" || rc=$?
fi
timed "suite"
log "step 5/5: logs, cluster deletion, engine (trap); e2e-kind took $((SECONDS - t0))s before teardown"
exit "$rc"
