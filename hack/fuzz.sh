#!/usr/bin/env bash
# Runs every native Go fuzz target (func FuzzXxx(*testing.F)) of the module for
# FUZZTIME each, one after the other: `go test -fuzz` takes one target of one
# package at a time. The targets are listed, not named here, so a new one is
# picked up by itself.
#
# A target that finds an input breaking it fails; go test writes that input to
# <package>/testdata/fuzz/<target>/<hash>, where every later `go test` replays
# it as a seed: commit it with the fix. All targets run even after a failure;
# the script then exits non-zero. Logs and a summary go to $ARTIFACTS/fuzz.
#
#   FUZZTIME=60s hack/fuzz.sh        (make fuzz FUZZTIME=60s)
#   FUZZFLAGS='-parallel=1'          extra go test flags
#   FUZZ_TARGETS='Intent$'           only the targets whose name matches (grep -E)
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZTIME=${FUZZTIME:-30s}
FUZZFLAGS=${FUZZFLAGS:-}
FUZZ_TARGETS=${FUZZ_TARGETS:-.}
ARTIFACTS=${ARTIFACTS:-$PWD/_artifacts}
logdir=$ARTIFACTS/fuzz
mkdir -p "$logdir"

# Packages that may hold a target: a _test.go file (tracked or new) with a
# func Fuzz. `go test -list` then says which targets really build.
mapfile -t dirs < <(git ls-files -co --exclude-standard -- '*_test.go' |
	xargs -r grep -l -E '^func Fuzz[A-Z0-9_]' | xargs -r -n1 dirname | sort -u)
targets=()
for dir in "${dirs[@]}"; do
	while read -r name; do
		targets+=("$dir $name")
	done < <(go test -list '^Fuzz' "./$dir" | grep -E '^Fuzz' | grep -E -- "$FUZZ_TARGETS" || true)
done
if ((${#targets[@]} == 0)); then
	echo "fuzz: no fuzz target found" >&2
	exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${FUZZTIME} each"

summary=$logdir/summary.txt
printf '%-28s %-28s %12s  %s\n' TARGET PACKAGE EXECS RESULT | tee "$summary"
failed=0
for t in "${targets[@]}"; do
	dir=${t% *}
	name=${t#* }
	log=$logdir/$name.log
	echo "== $name (./$dir, -fuzztime=$FUZZTIME)"
	rc=0
	# shellcheck disable=SC2086 # FUZZFLAGS is a list of flags
	go test -run='^$' -fuzz="^${name}\$" -fuzztime="$FUZZTIME" $FUZZFLAGS "./$dir" 2>&1 | tee "$log" || rc=$?
	execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -n 1 | awk '{print $2}' || true)
	crasher=$(grep -oE 'Failing input written to [^ ]+' "$log" | tail -n 1 | awk '{print $5}' || true)
	if ((rc == 0)); then
		result=ok
	elif [[ -n $crasher ]]; then
		result="FINDING: input in $dir/$crasher (replay: go test -run='^$name/${crasher##*/}\$' ./$dir)"
		failed=1
	else
		result="FAIL without a finding (build or seed failure), see $log"
		failed=1
	fi
	printf '%-28s %-28s %12s  %s\n' "$name" "./$dir" "${execs:-0}" "$result" >>"$summary"
done
echo "== summary ($summary)"
cat "$summary"
exit "$failed"
