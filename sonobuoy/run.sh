#!/bin/sh
# Entrypoint of the suite image (build/e2e.Dockerfile) as a Sonobuoy plugin:
# the suite starts a local cluster when --kubeconfig is empty, so this writes a
# kubeconfig for the pod's service account, runs e2e.test with its reports in
# the results directory, and tells Sonobuoy where they are (the `done` file).
# It exits 0 after a failed spec too: Sonobuoy reads failures from the JUnit.
set -u
RESULTS_DIR=${RESULTS_DIR:-/tmp/sonobuoy/results}
SA_DIR=${SA_DIR:-/var/run/secrets/kubernetes.io/serviceaccount}
E2E_BINARY=${E2E_BINARY:-/e2e.test}
E2E_LABEL_FILTER=${E2E_LABEL_FILTER:-}
E2E_TIMEOUT=${E2E_TIMEOUT:-90m}
WORK=${TMPDIR:-/tmp}/was-e2e
mkdir -p "$RESULTS_DIR" "$WORK"
HOST=${KUBERNETES_SERVICE_HOST:-}
[ -n "$HOST" ] || { echo "run.sh: KUBERNETES_SERVICE_HOST is empty: run me in a pod" >&2; exit 2; }
case $HOST in *:*) HOST="[$HOST]" ;; esac # IPv6

cat > "$WORK/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: in-cluster
  cluster:
    server: https://$HOST:${KUBERNETES_SERVICE_PORT:-443}
    certificate-authority: $SA_DIR/ca.crt
users:
- name: service-account
  user:
    tokenFile: $SA_DIR/token
contexts:
- name: in-cluster
  context: {cluster: in-cluster, user: service-account}
current-context: in-cluster
KUBECONFIG

set -- --kubeconfig="$WORK/kubeconfig" --artifacts="$RESULTS_DIR" \
  --ginkgo.junit-report="$RESULTS_DIR/junit_e2e.xml" --ginkgo.timeout="$E2E_TIMEOUT" \
  --ginkgo.v --ginkgo.no-color "$@"
[ -n "$E2E_LABEL_FILTER" ] && set -- "$@" --ginkgo.label-filter="$E2E_LABEL_FILTER"
"$E2E_BINARY" "$@" 2>&1 | tee "$RESULTS_DIR/e2e.log"

# The conformance report (testplan.md: environment, every test-plan id with
# its result and proving spec) when the image has the generator. Unit-level
# ids stay MISSING here: the image runs no unit tests.
TESTPLAN_REPORT=${TESTPLAN_REPORT:-/testplan-report}
if [ -x "$TESTPLAN_REPORT" ]; then
  "$TESTPLAN_REPORT" --junit "$RESULTS_DIR/junit_e2e.xml" --unit-json "" --out "$RESULTS_DIR/testplan.md" --fail-on "" || true
fi

# One tarball of everything (JUnit, summary_e2e.md, testplan.md, environment.json, failure dumps, log).
tar -czf "$WORK/results.tar.gz" -C "$RESULTS_DIR" .
mv "$WORK/results.tar.gz" "$RESULTS_DIR/results.tar.gz"
printf '%s' "$RESULTS_DIR/results.tar.gz" > "$RESULTS_DIR/done"
