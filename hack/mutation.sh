#!/usr/bin/env bash
# make mutation: the suite's self-test. Each hack/mutation/NN-name.patch is a
# deliberately wrong variant of the reference implementation that breaks one
# MUST of KEP-6276 or KEP-6277 (its header says which, and how a vendor might
# plausibly get it wrong). For each variant this script
#   1. applies the patch to a scratch copy of the tree (never to yours),
#   2. builds was-controller-manager there,
#   3. starts a local cluster whose reference add-on runs THAT binary
#      (was-harness cluster up --addon-bin-dir),
#   4. runs the vendor-mode suite against it, as `make conformance
#      KUBECONFIG=...` does (the prerequisite check, then hack/e2e.sh with
#      E2E_KUBECONFIG), with the restart and reconfigure hooks given; the
#      whole suite or only the specs of the variant's ids (MUTATION_SCOPE),
#   5. tears the cluster down and records which specs failed.
# First, the same is done with no patch (the baseline, "reference"): a spec
# that fails against the unmutated reference kills nothing.
# It prints the kill matrix (variant x specs that failed; survivors loudly)
# and writes it to $ARTIFACTS/mutation.md. Exit status: non-zero when a patch
# no longer applies or its header's "# Ids:" do not fit the suite (both
# checked for every patch before anything runs), when a variant does not
# build, when a variant survives or cannot be measured, or when a spec fails
# against the reference itself.
#
# Two scopes; the matrix says which one it measured:
#   MUTATION_SCOPE=all     (default) each variant runs the whole vendor-mode
#                          suite: what the suite as a whole catches. Hours:
#                          one cluster and ~80 specs per variant.
#   MUTATION_SCOPE=ids     each variant runs only the specs labelled with one
#                          of the test-plan ids its header names ("# Ids:",
#                          the specs meant to assert the rule it breaks), e.g.
#                          --ginkgo.label-filter='(D-I3 || D-U2) && !Disruptive';
#                          Disruptive specs as MUTATION_DISRUPTIVE says. The
#                          baseline runs the union of the selected variants'
#                          filters (of every variant when only 'reference' is
#                          selected). This measures whether the specs meant for
#                          each rule catch it, not the whole suite: a variant
#                          they miss may still be killed by another spec.
# The "# Ids:" check runs in both scopes: every patch must name ids, each id
# must label a spec of the suite (found, as `make verify` does, by a dry run
# of the compiled suite into specs.json), and a variant not marked "Seen-by:
# Disruptive" must name an id with a non-Disruptive spec.
#
#   MUTANTS='01 07'        run only these variants (by number or full name;
#                          'reference' alone runs just the baseline)
#   MUTATION_SCOPE=        all (default) or ids: see above
#   MUTATION_BASELINE=0    skip the baseline (then a spec that fails against
#                          the reference too counts as a kill; the matrix says so)
#   LABEL_FILTER=...       passed through to the suite ('!Disruptive' is added
#                          as in vendor mode unless Disruptive specs are allowed);
#                          in the ids scope it narrows each run's filter
#   MUTATION_DISRUPTIVE=   auto (default): allow Disruptive specs, through the
#                          hooks, only for variants whose header says
#                          "Seen-by: Disruptive"; 1: for every variant; 0: never
#   MUTATION_BUILD_ONLY=1  stop after checking every patch and building the
#                          selected variants (minutes, no cluster)
#   MUTATION_FAIL_FAST=1   stop each variant's suite at its first failed spec
#                          (faster, but the matrix then shows one killer each)
#   MUTATION_LOCK=FILE     run each variant's cluster and suite under
#                          `flock FILE` (a machine shared with other e2e runs)
#   MUTATION_SOURCE=       worktree (default: tracked and untracked files as
#                          they are now) or head (git archive HEAD)
#   MUTATION_WORK=DIR      scratch directory (default: a new one under /tmp,
#                          removed at the end unless MUTATION_KEEP=1)
#   extra arguments        go to the ginkgo CLI (hack/e2e.sh), e.g. --focus='D-I3'
#
# The same machinery, the other expectation: `make variants`
# (MUTATION_EXPECT=pass) runs the CORRECT variants of hack/variants/, each a
# choice the KEPs allow that the reference did not make (its header quotes the
# KEP text: "# Allowed"), and the suite must PASS them: every id the baseline
# passes must PASS against each variant (for a variant of one KEP, the other
# KEP's ids must be reported as not implemented). A correct variant the suite
# fails is a false positive: the suite would fail a correct vendor. The matrix
# goes to $ARTIFACTS/variants.md, the runs to $ARTIFACTS/variants/.
#   MUTATION_EXPECT=       kill (default: hack/mutation/, wrong variants) or
#                          pass (hack/variants/, correct variants)
#
# `hack/mutation.sh refresh` rewrites, in hack/mutation/, the patches that no
# longer apply as they are but still merge cleanly (git apply -3) into the
# current tree, and names the ones that conflict; review the diff.
#
# Per-variant artifacts: $ARTIFACTS/mutation/NN-name/ (outcome, build.log,
# check.log, e2e.log, junit_e2e.xml, label-filter, seconds, the mutant
# cluster's logs); the dry run's specs.json and the ids scope's filters in
# $ARTIFACTS/mutation/scope/.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
ARTIFACTS=${ARTIFACTS:-$ROOT/_artifacts}
OUTPUT_DIR=${OUTPUT_DIR:-$ROOT/_output}
KUBE_VERSION=${KUBE_VERSION:-$(hack/versions.sh kube)}
MUTANTS=${MUTANTS:-}
LABEL_FILTER=${LABEL_FILTER:-}
MUTATION_DISRUPTIVE=${MUTATION_DISRUPTIVE:-auto}
MUTATION_FAIL_FAST=${MUTATION_FAIL_FAST:-}
MUTATION_BUILD_ONLY=${MUTATION_BUILD_ONLY:-}
MUTATION_BASELINE=${MUTATION_BASELINE:-1}
MUTATION_LOCK=${MUTATION_LOCK:-}
MUTATION_SOURCE=${MUTATION_SOURCE:-worktree}
MUTATION_KEEP=${MUTATION_KEEP:-}
MUTATION_SCOPE=${MUTATION_SCOPE:-all}
MUTATION_EXPECT=${MUTATION_EXPECT:-kill}
case $MUTATION_EXPECT in
  kill) PATCH_DIR=$ROOT/hack/mutation RESULTS=$ARTIFACTS/mutation MATRIX=$ARTIFACTS/mutation.md ;;
  pass) PATCH_DIR=$ROOT/hack/variants RESULTS=$ARTIFACTS/variants MATRIX=$ARTIFACTS/variants.md ;;
  *) printf '[mutation] ERROR: MUTATION_EXPECT=%s: want kill (hack/mutation/) or pass (hack/variants/)\n' "$MUTATION_EXPECT" >&2; exit 1 ;;
esac
export GOFLAGS="${GOFLAGS:-} -buildvcs=false"
log() { printf '[mutation %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '[mutation] ERROR: %s\n' "$*" >&2; exit 1; }

case $MUTATION_DISRUPTIVE in auto | 0 | 1) ;; *) die "MUTATION_DISRUPTIVE=$MUTATION_DISRUPTIVE: want auto, 0 or 1" ;; esac
case $MUTATION_SOURCE in worktree | head) ;; *) die "MUTATION_SOURCE=$MUTATION_SOURCE: want worktree or head" ;; esac
case $MUTATION_BASELINE in 0 | 1) ;; *) die "MUTATION_BASELINE=$MUTATION_BASELINE: want 0 or 1" ;; esac
case $MUTATION_SCOPE in all | ids) ;; *) die "MUTATION_SCOPE=$MUTATION_SCOPE: want all or ids" ;; esac

# snapshot DIR: the source tree as a throw-away git repository, so a patch is
# applied, built and undone there with git, never in the shared tree. Its
# objects borrow this repository's, so `git apply -3` finds a patch's base.
snapshot() {
  local dir=$1
  mkdir -p "$dir"
  if [[ $MUTATION_SOURCE == head ]]; then
    git archive HEAD | tar -x -C "$dir"
  else
    # Tracked and untracked files, not ignored ones, as they are on disk now;
    # a stray executable (`go build` at the root) is not source.
    git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
      [[ -f $f && ! -L $f ]] || { [[ -L $f ]] && printf '%s\0' "$f"; continue; }
      [[ $(LC_ALL=C head -c 4 "$f" | od -An -tx1 | tr -d ' \n') == 7f454c46 ]] && continue
      printf '%s\0' "$f"
    done | tar --null -T - -cf - | tar -x -C "$dir"
  fi
  git -C "$dir" init -q
  echo "$ROOT/.git/objects" >"$dir/.git/objects/info/alternates"
  git -C "$dir" add -A
  git -C "$dir" -c user.name=mutation -c user.email=mutation@localhost commit -q -m "snapshot of $ROOT ($MUTATION_SOURCE)"
}

# reset DIR: back to the snapshot (a scratch repository: --hard is safe).
reset() { git -C "$1" reset -q --hard && git -C "$1" clean -fdq; }

patches=()
for p in "$PATCH_DIR"/[0-9][0-9]-*.patch; do patches+=("$p"); done
((${#patches[@]})) || die "no patches in $PATCH_DIR"

if [[ ${1:-} == refresh ]]; then
  work=$(mktemp -d /tmp/was-mutation-refresh.XXXXXX)
  trap 'rm -rf "$work"' EXIT
  snapshot "$work/src"
  conflicts=()
  for p in "${patches[@]}"; do
    name=$(basename "$p" .patch)
    git -C "$work/src" apply --check "$p" 2>/dev/null && continue
    if git -C "$work/src" apply -3 "$p" >/dev/null 2>&1 && ! git -C "$work/src" diff --quiet HEAD; then
      { sed -n '/^diff --git /q;p' "$p"; git -C "$work/src" diff HEAD; } >"$p.new" && mv "$p.new" "$p"
      log "refreshed $name"
    else
      conflicts+=("$name")
    fi
    reset "$work/src"
  done
  ((${#conflicts[@]} == 0)) || die "these variants conflict with the current tree; redo them by hand: ${conflicts[*]}"
  exit 0
fi

# --- selection ---
selected=()
for p in "${patches[@]}"; do
  name=$(basename "$p" .patch)
  if [[ -z $MUTANTS ]]; then selected+=("$p"); continue; fi
  for m in $MUTANTS; do
    if [[ $name == "$m" || $name == "$m"-* ]]; then selected+=("$p"); break; fi
  done
done
if [[ " $MUTANTS " == *" reference "* ]]; then
  MUTATION_BASELINE=1
elif ((${#selected[@]} == 0)); then
  die "MUTANTS='$MUTANTS' names no patch in $PATCH_DIR"
fi

# disruptive PATCH: 1 when the variant's suite run includes Disruptive specs.
disruptive() {
  case $MUTATION_DISRUPTIVE in
    0 | 1) echo "$MUTATION_DISRUPTIVE" ;;
    auto) if grep -q '^# Seen-by:.*Disruptive' "$1"; then echo 1; else echo 0; fi ;;
  esac
}
# The baseline runs every spec a variant runs, so each failure can be judged.
baseline_disruptive=0
for p in "${selected[@]}"; do [[ $(disruptive "$p") == 1 ]] && baseline_disruptive=1; done

[[ -x $OUTPUT_DIR/bin/kube/$KUBE_VERSION/kube-apiserver ]] ||
  die "no control-plane binaries in $OUTPUT_DIR/bin/kube/$KUBE_VERSION: run make binaries first"

WORK=${MUTATION_WORK:-$(mktemp -d /tmp/was-mutation.XXXXXX)}
mkdir -p "$WORK"
cluster_dir=""
lockwaiter=""
cleanup() {
  [[ -n $lockwaiter ]] && kill "$lockwaiter" 2>/dev/null
  [[ -n $cluster_dir ]] && "$WORK/output/bin/was-harness" cluster down --dir "$cluster_dir" >/dev/null 2>&1 || true
  [[ -n ${MUTATION_WORK:-} || $MUTATION_KEEP == 1 ]] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- 1. every patch must apply to the current tree ---
log "snapshot of the tree ($MUTATION_SOURCE) in $WORK/src"
rm -rf "$WORK/src"
snapshot "$WORK/src"
stale=()
for p in "${patches[@]}"; do
  if ! out=$(git -C "$WORK/src" apply --check "$p" 2>&1); then
    stale+=("$(basename "$p")")
    printf '[mutation] PATCH DOES NOT APPLY: %s\n%s\n' "$(basename "$p")" "$out" >&2
  fi
done
((${#stale[@]} == 0)) || die "${#stale[@]} of ${#patches[@]} patches no longer apply to the tree: ${stale[*]}
  Each variant must keep breaking its rule in the current code: try \`hack/mutation.sh refresh\`, or redo the patch by hand."
log "all ${#patches[@]} patches apply; ${#selected[@]} selected: $(for p in "${selected[@]}"; do basename "$p" .patch; done | tr '\n' ' ')"

# --- 2. build the tools once and every selected variant ---
rm -rf "$RESULTS"
mkdir -p "$RESULTS" "$WORK/output/bin"
log "building was-harness, testplan-report and the ginkgo CLI from the snapshot"
(cd "$WORK/src" && go build -o "$WORK/output/bin/" ./cmd/was-harness ./cmd/testplan-report github.com/onsi/ginkgo/v2/ginkgo)
ln -sfn "$OUTPUT_DIR/bin/kube" "$WORK/output/bin/kube"
[[ -e $OUTPUT_DIR/bin/tools ]] && ln -sfn "$OUTPUT_DIR/bin/tools" "$WORK/output/bin/tools"
HARNESS=$WORK/output/bin/was-harness
# The suite does not change from one variant to the next: compiled once here
# (hack/e2e.sh compiles it again per run, from the cache).
log "compiling the suite from the snapshot"
(cd "$WORK/src" && go test -c -tags e2e -o "$WORK/output/bin/e2e.test" ./suites/e2e)

# The suite's specs and their labels, listed as `make verify` lists them: a
# dry run of the compiled suite into specs.json (no cluster). Every patch's
# "# Ids:" must label some of them; in the ids scope idscope also writes each
# run's label filter (line 1) and the number of specs it selects (line 2) to
# $SCOPE_DIR/<variant> and $SCOPE_DIR/reference.
SCOPE_DIR=$RESULTS/scope
mkdir -p "$SCOPE_DIR"
log "listing the suite's specs: e2e.test --ginkgo.dry-run (no cluster is started)"
"$WORK/output/bin/e2e.test" --ginkgo.dry-run --ginkgo.no-color --ginkgo.json-report="$SCOPE_DIR/specs.json" \
  --artifacts="$SCOPE_DIR" >"$SCOPE_DIR/dry-run.log" 2>&1 || {
  cat "$SCOPE_DIR/dry-run.log" >&2
  die "the dry run of the suite failed"
}
scope_runs=()
if [[ $MUTATION_SCOPE == ids ]]; then
  # The baseline runs the union of the selected variants' filters; of every
  # variant's when only the baseline is selected (what a full ids run needs).
  union=("${selected[@]}")
  ((${#union[@]})) || union=("${patches[@]}")
  baseline_disruptive=0
  for p in "${union[@]}"; do
    d=$(disruptive "$p")
    [[ $d == 1 ]] && baseline_disruptive=1
    scope_runs+=("$(basename "$p" .patch)=$d")
  done
fi
log "checking every patch's # Ids: against the suite's specs$([[ $MUTATION_SCOPE == ids ]] && echo "; the ids scope's label filters:")"
(cd "$WORK/src" && go run ./hack/mutation/idscope --patches "$PATCH_DIR" --specs "$SCOPE_DIR/specs.json" \
  --out "$SCOPE_DIR" --label-filter "$LABEL_FILTER" ${scope_runs[@]+"${scope_runs[@]}"}) >&2 ||
  die "the variants' # Ids: headers do not fit the suite (above): each must name test-plan ids whose specs assert the variant's rule"

if [[ $MUTATION_BASELINE == 1 ]]; then
  log "building the unmutated reference (the baseline)"
  mkdir -p "$RESULTS/reference" "$WORK/variants/reference/bin"
  (cd "$WORK/src" && go build -o "$WORK/variants/reference/bin/was-controller-manager" ./controllers/cmd/was-controller-manager)
  cp -r "$WORK/src/controllers/config" "$WORK/variants/reference/config"
fi
broken=()
for p in "${selected[@]}"; do
  name=$(basename "$p" .patch)
  vdir=$RESULTS/$name
  mkdir -p "$vdir" "$WORK/variants/$name/bin"
  git -C "$WORK/src" apply "$p"
  log "building variant $name"
  if (cd "$WORK/src" && go build -o "$WORK/variants/$name/bin/was-controller-manager" ./controllers/cmd/was-controller-manager) >"$vdir/build.log" 2>&1; then
    # The descriptor and its manifests as the variant has them.
    cp -r "$WORK/src/controllers/config" "$WORK/variants/$name/config"
  else
    printf 'build-failed\n%s\n' "$(head -n 5 "$vdir/build.log")" >"$vdir/outcome"
    broken+=("$name")
    printf '[mutation] VARIANT DOES NOT BUILD: %s\n' "$name" >&2
    cat "$vdir/build.log" >&2
  fi
  reset "$WORK/src"
done
((${#broken[@]} == 0)) || die "${#broken[@]} variants do not build: ${broken[*]}"
if [[ $MUTATION_BUILD_ONLY == 1 ]]; then
  log "MUTATION_BUILD_ONLY=1: all ${#patches[@]} patches apply and name ids the suite has, and the ${#selected[@]} selected variants build; no cluster started"
  exit 0
fi

# --- 3-5. one cluster and one suite run per variant ---

# The vendor hooks are those of a `make cluster-up` cluster
# (hack/reconfigure-local.sh, hack/controller-restart-local.sh), pointed at the
# mutant cluster with CLUSTER_DIR and HARNESS; given as bare paths, they read
# their arguments from WAS_COMPONENT, WAS_FEATURE_GATES, WAS_RUNTIME_CONFIG and
# WAS_CONTROLLER_ACTION, which the suite sets.

# run_variant NAME DISRUPTIVE [SUITE ARGS...]: measure, timed (the seconds,
# cluster start and stop included, go to $RESULTS/NAME/seconds).
run_variant() {
  local t0=$SECONDS
  measure "$@"
  echo $((SECONDS - t0)) >"$RESULTS/$1/seconds"
  log "[$1] done in $((SECONDS - t0))s"
}

# declared_keps NAME: the KEPs the variant (or the baseline) implements, as
# --implements takes them: a correct variant's "# Implements:" header, else
# both (the reference and every wrong variant implement both KEPs).
declared_keps() {
  local impl=""
  [[ $1 != reference ]] && impl=$(sed -n 's/^# Implements: *//p' "$PATCH_DIR/$1.patch" | head -n 1 | tr -d ' ')
  echo "${impl:-KEP-6276,KEP-6277}"
}

# measure_on_harness_cluster NAME FILTER [SUITE ARGS...]: a variant only the
# harness's own cluster can see ("# Seen-by: ... harness's cluster": the
# reference's write crash points, which the vendor-mode suite cannot arm):
# make e2e's local run with the variant's build as the add-on (the
# descriptor's binaries made absolute), the Disruptive specs of its filter
# included; writes the outcome.
measure_on_harness_cluster() {
  local name=$1 filter=$2
  shift 2
  local vdir=$RESULTS/$name vwork=$WORK/variants/$name
  sed -E "s|^( *binary: *)([^/ ][^ ]*)$|\1$vwork/bin/\2|" "$vwork/config/localcluster-addon.yaml" >"$vwork/config/addon-harness.yaml"
  log "[$name] on the harness's own cluster (make e2e's local run, the add-on is this build), label filter ${filter:-(none)}"
  local rc=0
  (cd "$WORK/src" && env ARTIFACTS="$vdir" OUTPUT_DIR="$WORK/output" E2E_BINARY="$WORK/output/bin/e2e.test" \
    LABEL_FILTER="$filter" UNIT_JSON= WAS_ADDON="$vwork/config/addon-harness.yaml" \
    hack/e2e.sh "$@") >"$vdir/run.log" 2>&1 || rc=$?
  echo "$filter" >"$vdir/label-filter"
  printf 'ran %d\n' "$rc" >"$vdir/outcome"
  log "[$name] suite exited $rc ($(grep -c '<failure' "$vdir/junit_e2e.xml" 2>/dev/null || true) failed specs)"
}

# measure NAME DISRUPTIVE [SUITE ARGS...]: cluster up, check, suite, cluster
# down; writes the outcome.
measure() {
  local name=$1 disruptive=$2
  shift 2
  local vdir=$RESULTS/$name vwork=$WORK/variants/$name
  local filter=$LABEL_FILTER
  if [[ $MUTATION_SCOPE == ids ]]; then
    # idscope's filter: the variant's ids (the baseline: their union),
    # with !Disruptive already in it unless Disruptive specs are allowed.
    local count
    { read -r filter && read -r count; } <"$SCOPE_DIR/$name"
    if ((count == 0)); then
      printf 'no-specs\nthe ids scope selects no spec for it (label filter %s)\n' "$filter" >"$vdir/outcome"
      log "[$name] NOT MEASURED: its label filter selects no spec: $filter"
      return 0
    fi
    log "[$name] ids scope: $count specs, label filter $filter"
  fi
  if [[ $name != reference ]] && grep -q "^# Seen-by:.*harness's cluster" "$PATCH_DIR/$name.patch"; then
    measure_on_harness_cluster "$name" "$filter" "$@"
    return 0
  fi
  cluster_dir=$vwork/cluster

  log "[$name] starting a cluster whose add-on runs this build of was-controller-manager"
  if ! "$HARNESS" cluster up --dir "$cluster_dir" --output-dir "$OUTPUT_DIR" --kube-version "$KUBE_VERSION" \
    --addon "$vwork/config/localcluster-addon.yaml" --addon-bin-dir "$vwork/bin" >"$vdir/cluster-up.log" 2>&1; then
    printf 'cluster-failed\n%s\n' "$(tail -n 3 "$vdir/cluster-up.log")" >"$vdir/outcome"
    log "[$name] the cluster did not start (see $vdir/cluster-up.log)"
    "$HARNESS" cluster down --dir "$cluster_dir" >/dev/null 2>&1 || true
    cp -r "$cluster_dir/logs" "$vdir/cluster-logs" 2>/dev/null || true
    cluster_dir=""
    return 0
  fi
  local kubeconfig=$cluster_dir/kubeconfig
  # The KEPs the variant implements, declared as a vendor declares theirs
  # (IMPLEMENTS): a KEP declared but silent stops the run, where
  # auto-detection would skip its specs and let a wrong variant "survive".
  local implements
  implements=$(declared_keps "$name")

  log "[$name] prerequisite check (was-harness conformance --check-only, IMPLEMENTS=$implements)"
  if ! IMPLEMENTS=$implements "$HARNESS" conformance --check-only --kubeconfig "$kubeconfig" --artifacts "$vdir" >"$vdir/check.log" 2>&1; then
    # The first thing the check found missing (the line after "lacks what
    # the suite needs"), else its last line.
    local missing
    missing=$(awk 'found { sub(/^ *- /, ""); print; exit } /lacks what the suite needs/ { found = 1 }' "$vdir/check.log")
    [[ -n $missing ]] || missing=$(grep -v '^\s*$' "$vdir/check.log" | tail -n 1)
    printf 'check-failed\n%s\n' "$missing" >"$vdir/outcome"
    log "[$name] killed by the prerequisite check (see $vdir/check.log)"
  else
    local allow=""
    [[ $disruptive == 1 ]] && allow=1
    local suite_args=("$@")
    [[ $MUTATION_FAIL_FAST == 1 ]] && suite_args+=(--fail-fast)
    log "[$name] running the vendor-mode suite, $MUTATION_SCOPE scope (Disruptive specs through the hooks: $([[ $allow == 1 ]] && echo yes || echo no))"
    local rc=0
    (cd "$WORK/src" && env E2E_KUBECONFIG="$kubeconfig" ARTIFACTS="$vdir" OUTPUT_DIR="$WORK/output" \
      E2E_BINARY="$WORK/output/bin/e2e.test" LABEL_FILTER="$filter" ALLOW_DISRUPTIVE="$allow" UNIT_JSON= \
      CLUSTER_DIR="$cluster_dir" HARNESS="$HARNESS" IMPLEMENTS="$implements" \
      CONTROLLER_RESTART_COMMAND="$WORK/src/hack/controller-restart-local.sh" \
      RECONFIGURE_COMMAND="$WORK/src/hack/reconfigure-local.sh" \
      hack/e2e.sh "${suite_args[@]}") >"$vdir/run.log" 2>&1 || rc=$?
    # What hack/e2e.sh ended up filtering on (it adds !Disruptive in vendor mode).
    sed -n 's/.*label filter: //p' "$vdir/run.log" | tail -n 1 >"$vdir/label-filter"
    printf 'ran %d\n' "$rc" >"$vdir/outcome"
    log "[$name] suite exited $rc ($(grep -c '<failure' "$vdir/junit_e2e.xml" 2>/dev/null || true) failed specs)"
  fi
  "$HARNESS" cluster down --dir "$cluster_dir" >"$vdir/cluster-down.log" 2>&1 || true
  cp -r "$cluster_dir/logs" "$vdir/cluster-logs" 2>/dev/null || true
  cluster_dir=""
}

# run NAME DISRUPTIVE [SUITE ARGS...]: run_variant, under MUTATION_LOCK if set.
run() {
  local name=$1
  if [[ -z $MUTATION_LOCK ]]; then
    run_variant "$@"
    return
  fi
  # Held for this variant only; its processes get the descriptor closed, so
  # a cluster component never keeps the lock.
  exec {lockfd}>"$MUTATION_LOCK"
  log "[$name] waiting for $MUTATION_LOCK"
  # In the background, so a signal is handled while waiting.
  flock "$lockfd" &
  lockwaiter=$!
  wait "$lockwaiter"
  lockwaiter=""
  run_variant "$@" {lockfd}>&-
  flock -u "$lockfd"
  exec {lockfd}>&-
}

t0=$SECONDS
if [[ $MUTATION_BASELINE == 1 ]]; then
  log "baseline: the unmutated reference"
  run reference "$baseline_disruptive" "$@"
fi
i=0
for p in "${selected[@]}"; do
  name=$(basename "$p" .patch)
  i=$((i + 1))
  log "variant $i/${#selected[@]}: $name"
  run "$name" "$(disruptive "$p")" "$@"
done
log "ran ${#selected[@]} variants$([[ $MUTATION_BASELINE == 1 ]] && echo ' and the baseline') in $((SECONDS - t0))s ($MUTATION_SCOPE scope)"

rc=0
(cd "$WORK/src" && go run ./hack/mutation/killmatrix --patches "$PATCH_DIR" --results "$RESULTS" --scope "$MUTATION_SCOPE" \
  --expect "$MUTATION_EXPECT" --out "$MATRIX") || rc=$?
log "$([[ $MUTATION_EXPECT == pass ]] && echo correct-variant || echo kill) matrix: $MATRIX; per-variant logs in $RESULTS/"
exit "$rc"
