#!/usr/bin/env bash
# make e2e: build what is missing, run every suite against a local cluster the
# suite starts itself (or an existing one: E2E_KUBECONFIG), write
# $ARTIFACTS/junit_e2e.xml, summary_e2e.md and testplan.md/.html, and exit non-zero
# when a spec fails. Nothing is left running afterwards: the suite stops its
# cluster (also on Ctrl-C), the kernel kills the components if the suite dies,
# and the trap below stops anything still recorded in the cluster's state file.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# A hook's relative path resolves against the caller's directory (make sets
# it; framework/hooks.go), not against this script's or the suite's.
export WAS_HOOK_DIR=${WAS_HOOK_DIR:-$PWD}
cd "$ROOT"
ARTIFACTS=${ARTIFACTS:-$ROOT/_artifacts}
OUTPUT_DIR=${OUTPUT_DIR:-$ROOT/_output}
KUBE_VERSION=${KUBE_VERSION:-$(hack/versions.sh kube)}
SKEW_KUBE_VERSION=${SKEW_KUBE_VERSION:-$(hack/versions.sh skew)}
# The implementation the local cluster runs as an add-on (empty: none).
WAS_ADDON=${WAS_ADDON-$ROOT/controllers/config/localcluster-addon.yaml}
E2E_KUBECONFIG=${E2E_KUBECONFIG:-}
LABEL_FILTER=${LABEL_FILTER:-}
# Vendor mode (E2E_KUBECONFIG): Disruptive specs restart or reconfigure
# cluster components, so they are left out unless the filter names them or
# ALLOW_DISRUPTIVE=1 says so.
ALLOW_DISRUPTIVE=${ALLOW_DISRUPTIVE:-}
if [[ -n $E2E_KUBECONFIG && $LABEL_FILTER != *Disruptive* && $ALLOW_DISRUPTIVE != 1 ]]; then
  LABEL_FILTER=${LABEL_FILTER:+($LABEL_FILTER) && }'!Disruptive'
fi
# The unit tests' unit.json is evidence in the report only when `make test`
# wrote it in this run: its stamp names this source tree and a start no
# earlier than RUN_STARTED (make and .ci/run set it once per invocation, so
# `make test e2e` is one run). UNIT_JSON=file reads that file regardless.
RUN_STARTED=${RUN_STARTED:-$(date -u +%Y-%m-%dT%H:%M:%SZ)}
UNIT_JSON=${UNIT_JSON:-}
# 60 min: the whole suite takes about 30 min on 2 cores (the crash sweep 9 of
# them); twice that is a hang, not a slow machine.
GINKGO_TIMEOUT=${GINKGO_TIMEOUT:-60m}
# The report's statuses that fail the run (testplan-report --fail-on), and
# the ids allowed not to pass, with reasons the report keeps (ALLOW_SKIP=
# "ID=reason; ..."; read by testplan-report from the environment).
REPORT_FAIL_ON=${REPORT_FAIL_ON:-FAIL}
# Where the compiled suite goes; set it to run several suites side by side.
E2E_BINARY=${E2E_BINARY:-$OUTPUT_DIR/bin/e2e.test}
# Ginkgo processes running specs side by side on the one cluster. The specs
# mostly wait (on the scheduler, on controllers, on Consistently windows), so
# more processes than cores pays. Serial specs (whole-cluster capacity,
# component restarts) run apart: see OWN_CLUSTERS.
PROCS=${PROCS:-6}
# On the local cluster, Serial specs run beside the other specs, each
# process keeping a local cluster of its own for those that land on it,
# instead of alone after them on the shared cluster (framework/
# owncluster.go). OWN_CLUSTERS is how many such clusters run at once on top
# of the shared one (default PROCS: no process waits for one). OWN_CLUSTERS=0
# runs Serial specs one after another on the shared cluster, as against an
# existing cluster, where it is always so.
OWN_CLUSTERS=${OWN_CLUSTERS:-$PROCS}
if [[ -z $E2E_KUBECONFIG && $OWN_CLUSTERS =~ ^[1-9][0-9]*$ ]]; then
  export WAS_OWN_CLUSTERS=$OWN_CLUSTERS
else
  unset WAS_OWN_CLUSTERS
fi
GINKGO=${GINKGO:-$OUTPUT_DIR/bin/ginkgo}
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
mkdir -p "$ARTIFACTS"
log() { printf '[e2e %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

cleanup() {
  # Backstop only: the suite's own teardown normally removed the state files.
  local dir
  for dir in "$ARTIFACTS/cluster" "$ARTIFACTS"/clusters/*/; do
    [[ -d $dir ]] && "$OUTPUT_DIR/bin/was-harness" cluster down --dir "$dir" >/dev/null 2>&1 || true
  done
}
trap cleanup EXIT

t0=$SECONDS
if [[ -z $E2E_KUBECONFIG ]]; then
  log "step 1/4: control-plane binaries ($KUBE_VERSION)"
  hack/build-binaries.sh
  log "step 1/4: the version-skew and downgrade specs' kube-scheduler and kube-controller-manager ($SKEW_KUBE_VERSION)"
  KUBE_VERSION=$SKEW_KUBE_VERSION KUBE_BINARIES="kube-scheduler kube-controller-manager" hack/build-binaries.sh kube
else
  log "step 1/4: using the existing cluster of $E2E_KUBECONFIG (no binaries needed)"
fi

log "step 2/4: compiling the suites into $E2E_BINARY"
# The source tree the suite is built from; a unit.json must come from it.
source_id=$("$OUTPUT_DIR/bin/testplan-report" source-id || true)
go test -c -tags e2e -o "$E2E_BINARY" ./suites/e2e

log "step 3/4: running the suites (spec progress below; full log in $ARTIFACTS/e2e.log)"
log "label filter: ${LABEL_FILTER:-(none: every spec)}"
# The suite rewrites it (prerequisite check); a stale one would mislead the report.
rm -f "$ARTIFACTS/environment.json"
# Nor may a JUnit of an earlier run speak for this one: it is stamped below
# (source tree, suite start), and the report reads only a JUnit whose stamp
# belongs to this run (--run-started).
rm -f "$ARTIFACTS/junit_e2e.xml" "$ARTIFACTS/junit_e2e.stamp.json"
# Ginkgo's own flags go to the ginkgo CLI, which starts $PROCS copies of the
# compiled suite and merges their reports; the suite's flags follow "--".
ginkgo_args=(
  --procs="$PROCS"
  -v
  --junit-report="$ARTIFACTS/junit_e2e.xml"
  --timeout="$GINKGO_TIMEOUT"
)
suite_args=(
  --artifacts="$ARTIFACTS"
  --output-dir="$OUTPUT_DIR"
  --kube-version="$KUBE_VERSION"
  --skew-kube-version="$SKEW_KUBE_VERSION"
  --addon="$WAS_ADDON"
)
[[ -n $E2E_KUBECONFIG ]] && suite_args+=(--kubeconfig="$E2E_KUBECONFIG")
[[ -n $LABEL_FILTER ]] && ginkgo_args+=(--label-filter="$LABEL_FILTER")
[[ -t 1 ]] || ginkgo_args+=(--no-color) # plain text in CI logs and e2e.log
[[ -x $GINKGO ]] || { log "ERROR: $GINKGO is missing: run 'make tools' (it builds the ginkgo CLI of go.mod's version)"; exit 2; }
if [[ -n ${WAS_OWN_CLUSTERS:-} ]]; then
  log "processes: $PROCS (PROCS=); Serial specs each on a local cluster of its own, beside the others, at most $WAS_OWN_CLUSTERS at once (OWN_CLUSTERS=; 0: alone, after them)"
else
  log "processes: $PROCS (PROCS=); Serial specs run alone after the others"
fi
# Own clusters of an earlier run would mislead whoever reads their logs.
rm -rf "$ARTIFACTS/clusters"
rc=0
suite_started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
"$GINKGO" run "${ginkgo_args[@]}" "$@" "$E2E_BINARY" -- "${suite_args[@]}" 2>&1 | tee "$ARTIFACTS/e2e.log" || rc=$?
if [[ -f $ARTIFACTS/junit_e2e.xml ]]; then
  "$OUTPUT_DIR/bin/testplan-report" stamp --junit "$ARTIFACTS/junit_e2e.xml" --source "$source_id" --started "$suite_started" >&2 || { [[ $rc -ne 0 ]] || rc=1; }
fi

log "step 4/4: test-plan report"
if [[ -n $UNIT_JSON ]]; then
  unit_args=(--unit-json "$UNIT_JSON")
else
  unit_args=(--unit-json-if-fresh "$ARTIFACTS/unit.json")
fi
"$OUTPUT_DIR/bin/testplan-report" --junit "$ARTIFACTS/junit_e2e.xml" --source "$source_id" --run-started "$RUN_STARTED" \
  "${unit_args[@]}" --fail-on "$REPORT_FAIL_ON" --out "$ARTIFACTS/testplan.md" || { [[ $rc -ne 0 ]] || rc=1; }

log "e2e finished in $((SECONDS - t0))s with exit code $rc; artifacts in $ARTIFACTS (junit_e2e.xml, summary_e2e.md, testplan.md, testplan.html, cluster/logs)"
exit "$rc"
