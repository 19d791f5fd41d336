#!/usr/bin/env bash
# make parity: Kubernetes' own [sig-apps] Deployment, ReplicaSet and
# StatefulSet e2e specs of the pinned version (suites/parity: built from the
# module k8s.io/kubernetes/test/e2e/apps, not copied), run against the
# implementation under test in three modes, and compared with stock
# kube-controller-manager's run of the same specs (the baseline):
#   baseline  stock kube-controller-manager, no implementation, no intent;
#   plain     the implementation, no intent;
#   basic     basic intent on every Deployment and StatefulSet
#             (fixtures/parity/basic.yaml, a MutatingAdmissionPolicy);
#   gang      gang intent wherever the KEPs allow it, the strategy
#             rewritten where the spec does not depend on it
#             (fixtures/parity/gang.yaml, hack/parity/strategy-dependent.txt).
# Each run gets a fresh local cluster (stopped afterwards, on every exit
# path), or, in vendor mode (E2E_KUBECONFIG), the given cluster, where the
# policies are removed again afterwards and there is no stock baseline
# unless PARITY_BASELINE names an earlier baseline run's directory.
# While the specs run, an observer records every Workload, PodGroup and pod
# (pkg/parity). `was-harness parity-report` then writes
# $ARTIFACTS/parity/parity.md (the spec x mode matrix, the times, the
# Workloads and PodGroups of every object with intent) and fails on a
# regression: a spec that fails only with the implementation or only with
# intent, or an object with intent that created pods without the Workload
# and PodGroups the KEPs require.
#
#   PARITY_MODES    runs, in order (default: baseline plain basic gang; vendor mode: plain basic gang)
#   PARITY_FOCUS    Ginkgo focus (default: the Deployment, ReplicaSet and StatefulSet specs)
#   PARITY_SKIP     Ginkgo skip (default: Disruptive, off-by-default features, cloud providers)
#   PARITY_BASELINE a baseline run directory to compare with instead of running one
#   PARITY_STOCK_ON, PARITY_STOCK_OFF  vendor mode: commands that switch the
#                   cluster to stock kube-controller-manager's controllers (the
#                   implementation's stopped) and back; given both, the
#                   baseline runs first on the same cluster (make parity-kind
#                   uses the kubeadm hooks)
#   PROCS           Ginkgo processes per run (default 4)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
ARTIFACTS=${ARTIFACTS:-$ROOT/_artifacts}
OUTPUT_DIR=${OUTPUT_DIR:-$ROOT/_output}
KUBE_VERSION=${KUBE_VERSION:-$(hack/versions.sh kube)}
E2E_KUBECONFIG=${E2E_KUBECONFIG:-}
PARITY_DIR=${PARITY_DIR:-$ARTIFACTS/parity}
PARITY_STOCK_ON=${PARITY_STOCK_ON:-}
PARITY_STOCK_OFF=${PARITY_STOCK_OFF:-}
if [[ -n $E2E_KUBECONFIG && ( -z $PARITY_STOCK_ON || -z $PARITY_STOCK_OFF ) ]]; then
  PARITY_MODES=${PARITY_MODES:-plain basic gang}
else
  PARITY_MODES=${PARITY_MODES:-baseline plain basic gang}
fi
PARITY_FOCUS=${PARITY_FOCUS:-'\[sig-apps\] (Deployment|ReplicaSet|StatefulSet) '}
PARITY_SKIP=${PARITY_SKIP:-'\[Disruptive\]|\[Feature:OffByDefault\]|\[Provider:'}
PARITY_BASELINE=${PARITY_BASELINE:-}
PARITY_TITLE=${PARITY_TITLE:-"Parity: Kubernetes $KUBE_VERSION sig-apps e2e specs against the implementation"}
PROCS=${PROCS:-4}
GINKGO=${GINKGO:-$OUTPUT_DIR/bin/ginkgo}
HARNESS=$OUTPUT_DIR/bin/was-harness
KUBECTL=${KUBECTL:-$OUTPUT_DIR/bin/kube/$KUBE_VERSION/kubectl}
PARITY_BINARY=${PARITY_BINARY:-$OUTPUT_DIR/bin/parity.test}
ADDON=${WAS_ADDON-$ROOT/controllers/config/localcluster-addon.yaml}
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
log() { printf '[parity %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

for m in $PARITY_MODES; do
  case $m in
    baseline) [[ -z $E2E_KUBECONFIG || ( -n $PARITY_STOCK_ON && -n $PARITY_STOCK_OFF ) ]] ||
      { log "ERROR: PARITY_MODES: baseline needs stock kube-controller-manager: the local cluster, or in vendor mode PARITY_STOCK_ON and PARITY_STOCK_OFF (or PARITY_BASELINE=<an earlier baseline run's directory>)"; exit 2; } ;;
    plain | basic | gang) ;;
    *) log "ERROR: PARITY_MODES: unknown mode $m (want baseline, plain, basic, gang)"; exit 2 ;;
  esac
done
[[ -x $GINKGO ]] || { log "ERROR: $GINKGO is missing: run 'make tools'"; exit 2; }
[[ -x $KUBECTL ]] || { log "ERROR: $KUBECTL is missing: run 'make binaries'"; exit 2; }

t0=$SECONDS
log "compiling Kubernetes $KUBE_VERSION's sig-apps e2e specs into $PARITY_BINARY (cached after the first time)"
go test -c -tags parity -o "$PARITY_BINARY" ./suites/parity
go build -o "$OUTPUT_DIR/bin/" ./cmd/was-harness

# Every exit path: the policies off a vendor cluster, the implementation
# back on it, every local cluster down.
policies_on=""
stock_on=""
cleanup() {
  local pids
  pids=$(jobs -pr)
  [[ -z $pids ]] || kill $pids 2>/dev/null || true
  wait 2>/dev/null || true
  if [[ -n $policies_on && -n $E2E_KUBECONFIG ]]; then
    "$KUBECTL" --kubeconfig "$E2E_KUBECONFIG" delete --ignore-not-found -f "fixtures/parity/$policies_on.yaml" >/dev/null 2>&1 ||
      log "WARNING: could not remove the $policies_on intent policy from the cluster: kubectl delete -f fixtures/parity/$policies_on.yaml"
  fi
  if [[ -n $stock_on ]]; then
    bash -c "$PARITY_STOCK_OFF" || log "WARNING: switching the cluster back to the implementation failed; run: $PARITY_STOCK_OFF"
  fi
  local m
  for m in $PARITY_MODES; do
    [[ -z $E2E_KUBECONFIG ]] && "$HARNESS" cluster down --dir "$PARITY_DIR/$m/cluster" >/dev/null 2>&1 || true
  done
}
trap cleanup EXIT

# install_policy MODE KUBECONFIG: the mode's intent policy, then a probe
# that it is in force (a dry-run Deployment in a namespace like the specs').
install_policy() {
  local mode=$1 kc=$2 probe_ns=parity-policy-probe
  "$KUBECTL" --kubeconfig "$kc" apply -f "fixtures/parity/$mode.yaml" >&2
  "$KUBECTL" --kubeconfig "$kc" create namespace "$probe_ns" --dry-run=client -o yaml |
    "$KUBECTL" --kubeconfig "$kc" label --local -f - e2e-run=parity-policy-probe -o yaml |
    "$KUBECTL" --kubeconfig "$kc" apply -f - >/dev/null
  local i
  for i in $(seq 60); do
    if "$KUBECTL" --kubeconfig "$kc" -n "$probe_ns" create deployment parity-probe --image=registry.k8s.io/pause:3.10.2 --dry-run=server -o jsonpath='{.metadata.annotations}' 2>/dev/null |
      grep -q 'scheduling.was-harness.io/deployment-scheduling'; then
      "$KUBECTL" --kubeconfig "$kc" delete namespace "$probe_ns" --wait=false >/dev/null
      log "the $mode intent policy is in force"
      return 0
    fi
    sleep 1
  done
  log "ERROR: the $mode intent policy (fixtures/parity/$mode.yaml) did not mutate a dry-run Deployment within 60s"
  return 1
}

run_mode() {
  local mode=$1 dir=$PARITY_DIR/$1 kc rc=0
  rm -rf "$dir" && mkdir -p "$dir"
  local cluster_dir=""
  if [[ -n $E2E_KUBECONFIG ]]; then
    kc=$E2E_KUBECONFIG
  else
    cluster_dir=$dir/cluster
    local addon_args=(--addon "$ADDON")
    [[ $mode == baseline ]] && addon_args=(--addon=)
    log "$mode: starting a local cluster ($([[ $mode == baseline ]] && echo 'stock kube-controller-manager' || echo "the implementation: $ADDON"))"
    "$HARNESS" cluster up --dir "$cluster_dir" --output-dir "$OUTPUT_DIR" --kube-version "$KUBE_VERSION" "${addon_args[@]}" >"$dir/cluster-up.log" 2>&1 ||
      { log "ERROR: the $mode cluster did not start: $dir/cluster-up.log"; tail -20 "$dir/cluster-up.log" >&2; return 1; }
    kc=$cluster_dir/kubeconfig
  fi
  if [[ $mode == basic || $mode == gang ]]; then
    install_policy "$mode" "$kc" || return 1
  fi
  local args=(
    --procs="$PROCS" --no-color --timeout=90m
    --focus="$PARITY_FOCUS" --skip="$PARITY_SKIP"
    --json-report="$dir/report.json" --junit-report="$dir/junit.xml"
  )
  local suite_args=(
    --kubeconfig="$kc" --kubectl-path="$KUBECTL" --provider=local
    --report-dir="$dir" --parity-mode="$mode"
    --parity-observations="$dir/observations.json"
    --parity-progress="$dir/progress.log"
  )
  [[ $mode == gang ]] && suite_args+=(--parity-strategy-dependent="$ROOT/hack/parity/strategy-dependent.txt")
  log "$mode: running the specs ($PROCS processes; log: $dir/e2e.log)"
  local t=$SECONDS
  # One line per spec as it ends (the binary's progress file), the rest in the log.
  : >"$dir/progress.log"
  tail -n +1 -f "$dir/progress.log" > >(sed -u "s/^/[parity $mode] /" >&2) &
  local follower=$!
  "$GINKGO" run "${args[@]}" "$PARITY_BINARY" -- "${suite_args[@]}" >"$dir/e2e.log" 2>&1 || rc=$?
  sleep 1
  kill "$follower" 2>/dev/null || true
  wait "$follower" 2>/dev/null || true
  log "$mode: done in $((SECONDS - t))s (ginkgo exit $rc)"
  if [[ $mode == basic || $mode == gang ]]; then
    "$KUBECTL" --kubeconfig "$kc" delete --ignore-not-found -f "fixtures/parity/$mode.yaml" >/dev/null
  fi
  if [[ -n $cluster_dir ]]; then
    "$HARNESS" cluster down --dir "$cluster_dir" >/dev/null
  fi
  [[ -f $dir/report.json ]] || { log "ERROR: the $mode run wrote no report (see $dir/e2e.log)"; return 1; }
}

runs=()
baseline_args=()
[[ -n $PARITY_BASELINE ]] && baseline_args=(--baseline "$PARITY_BASELINE")
for mode in $PARITY_MODES; do
  if [[ $mode == baseline ]]; then
    baseline_args=(--baseline "$PARITY_DIR/baseline")
  else
    runs+=("$mode=$PARITY_DIR/$mode")
  fi
done
failed=0
if [[ -n $E2E_KUBECONFIG ]]; then
  # One cluster: the modes' policies are cluster-wide, so one run at a time.
  for mode in $PARITY_MODES; do
    [[ $mode == basic || $mode == gang ]] && policies_on=$mode
    if [[ $mode == baseline ]]; then
      log "baseline: switching the cluster to stock kube-controller-manager: $PARITY_STOCK_ON"
      stock_on=1
      bash -c "$PARITY_STOCK_ON" || { log "ERROR: PARITY_STOCK_ON failed"; exit 1; }
      run_mode "$mode" || failed=1
      log "baseline: switching the cluster back to the implementation: $PARITY_STOCK_OFF"
      bash -c "$PARITY_STOCK_OFF" || { log "ERROR: PARITY_STOCK_OFF failed"; exit 1; }
      stock_on=""
    else
      run_mode "$mode" || failed=1
    fi
    policies_on=""
  done
else
  # A cluster per mode, side by side: the specs mostly wait (on pods, on
  # timeouts of what kwok nodes cannot do), so the runs share 2 cores well.
  log "runs side by side, each on a local cluster of its own: $PARITY_MODES"
  pids=()
  for mode in $PARITY_MODES; do
    run_mode "$mode" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || failed=1
  done
fi
((failed == 0)) || log "a run did not complete; the report below says which"
log "report: $PARITY_DIR/parity.md (all runs took $((SECONDS - t0))s)"
"$HARNESS" parity-report --out "$PARITY_DIR/parity.md" --title "$PARITY_TITLE" "${baseline_args[@]}" "${runs[@]}"
