#!/usr/bin/env bash
# make stress (or make e2e STRESS=1): run the e2e suites REPEAT times while
# busy processes compete for every core, and report each spec's flake rate.
#
#   REPEAT=N         runs of the suite (default 1); each gets a fresh cluster
#   STRESS_PROCS=N   busy processes (default: the number of cores); 0 = no load
#   LABEL_FILTER=... the usual label selection, e.g. 'Feature:WorkloadWithDeployment'
#
# The busy processes run at normal priority (the suite must hold its waits
# under real contention; see framework.Calibration for how the windows follow
# the measured speed) and are stopped on every exit path. Each run's
# artifacts go to $ARTIFACTS/run-<i>/; the aggregate to $ARTIFACTS/flakes.md.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
ARTIFACTS=${ARTIFACTS:-$ROOT/_artifacts}
OUTPUT_DIR=${OUTPUT_DIR:-$ROOT/_output}
REPEAT=${REPEAT:-1}
STRESS_PROCS=${STRESS_PROCS:-$(nproc)}
log() { printf '[stress %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { echo "REPEAT=$REPEAT: want a positive number of runs" >&2; exit 2; }
[[ $STRESS_PROCS =~ ^[0-9]+$ ]] || { echo "STRESS_PROCS=$STRESS_PROCS: want a number of busy processes (0 for none)" >&2; exit 2; }

burners=()
stop_burners() {
  ((${#burners[@]})) && kill "${burners[@]}" 2>/dev/null || true
  ((${#burners[@]})) && wait "${burners[@]}" 2>/dev/null || true
  burners=()
}
trap stop_burners EXIT
trap 'exit 130' INT TERM

# Compile first, unloaded: the load is for the suite, not for the compiler
# (hack/e2e.sh compiles again, from the cache, in a second).
log "compiling the suites before the load starts"
go test -c -tags e2e -o "${E2E_BINARY:-$OUTPUT_DIR/bin/e2e.test}" ./suites/e2e

for ((i = 0; i < STRESS_PROCS; i++)); do
  # A shell busy loop: one full core each, normal priority, no memory.
  bash -c 'while :; do :; done' &
  burners+=($!)
done
log "$STRESS_PROCS busy processes on $(nproc) cores (pids ${burners[*]:-none}); $REPEAT run(s); label filter: ${LABEL_FILTER:-(every spec)}"

rc=0
reports=()
for ((run = 1; run <= REPEAT; run++)); do
  dir=$ARTIFACTS/run-$run
  rm -rf "$dir"
  mkdir -p "$dir"
  t0=$SECONDS
  if ARTIFACTS=$dir hack/e2e.sh "$@" >"$dir/stress-run.log" 2>&1; then
    log "run $run/$REPEAT passed in $((SECONDS - t0))s"
  else
    rc=1
    log "run $run/$REPEAT FAILED in $((SECONDS - t0))s (log: $dir/stress-run.log)"
  fi
  reports+=("$dir/junit_e2e.xml")
  grep -h '^\[calibration\]' "$dir/stress-run.log" | sed "s/^/[stress] run $run: /" >&2 || true
done
stop_burners

"$OUTPUT_DIR/bin/was-harness" flakes --title "Flake rate per spec: $REPEAT run(s), $STRESS_PROCS busy processes on $(nproc) cores" \
  --out "$ARTIFACTS/flakes.md" "${reports[@]}" | head -n 3 || rc=1
log "flake table: $ARTIFACTS/flakes.md"
exit "$rc"
