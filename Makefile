# Workload-Aware Scheduling for apps/v1: reference implementation and conformance harness.
# Needs only Go. Every target prints what it does; `make help` lists them.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# Kubernetes versions, from their one source (hack/versions.sh): the
# k8s.io/kubernetes version in go.mod, and api/cluster's previous minor,
# whose kube-scheduler the version-skew specs run.
ifndef KUBE_VERSION
KUBE_VERSION := $(shell hack/versions.sh kube)
endif
ifndef SKEW_KUBE_VERSION
SKEW_KUBE_VERSION := $(shell hack/versions.sh skew)
endif
ARTIFACTS    ?= $(CURDIR)/_artifacts
OUTPUT_DIR   ?= $(CURDIR)/_output
CLUSTER_DIR  ?= $(OUTPUT_DIR)/cluster
# Ginkgo label filter for `make e2e`, e.g. LABEL_FILTER='Harness || KEP-6276'.
LABEL_FILTER ?=
export KUBE_VERSION SKEW_KUBE_VERSION ARTIFACTS OUTPUT_DIR LABEL_FILTER
export GOFLAGS := $(GOFLAGS) -buildvcs=false
export GOTOOLCHAIN := local

# `make e2e KUBECONFIG=path` tests an existing cluster. A KUBECONFIG merely
# exported in the shell is ignored, so nobody runs the suite against their
# everyday cluster by accident.
ifeq ($(origin KUBECONFIG),command line)
E2E_KUBECONFIG := $(abspath $(KUBECONFIG))
endif
export E2E_KUBECONFIG

# A hook given as a relative path (RECONFIGURE_COMMAND=hack/reconfigure-local.sh
# make conformance ...) is resolved against the directory make was called from,
# as the caller's shell would resolve it: the inherited $PWD, which `make -C DIR`
# leaves as it was (CURDIR follows -C), else CURDIR. The suite runs in another
# working directory (the ginkgo CLI's), so it needs this (framework/hooks.go).
WAS_HOOK_DIR ?= $(if $(filter /%,$(PWD)),$(PWD),$(CURDIR))
export WAS_HOOK_DIR

HARNESS := $(OUTPUT_DIR)/bin/was-harness
REPORT  := $(OUTPUT_DIR)/bin/testplan-report
VERIFY_DIR := $(OUTPUT_DIR)/verify

# One run of the harness: the unit.json that `make test` writes counts as
# evidence in the report of the same run only (`make test e2e`, or the whole
# of .ci/run, which sets RUN_STARTED once). Its stamp says from which source
# tree and when; a unit.json of an earlier run or another commit is ignored.
ifndef RUN_STARTED
RUN_STARTED := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
endif
export RUN_STARTED

.PHONY: help
help: ## List targets.
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: binaries
binaries: ## Build the pinned control-plane binaries and the skew kube-scheduler and kube-controller-manager (cold ~18 min, cached after).
	hack/build-binaries.sh
	KUBE_VERSION=$(SKEW_KUBE_VERSION) KUBE_BINARIES="kube-scheduler kube-controller-manager" hack/build-binaries.sh

.PHONY: tools
tools: ## Build the harness's own commands, and the ginkgo CLI of go.mod's version (parallel runs), into _output/bin.
	@mkdir -p $(OUTPUT_DIR)/bin
	go build -o $(OUTPUT_DIR)/bin/ ./cmd/... ./controllers/cmd/... github.com/onsi/ginkgo/v2/ginkgo

.PHONY: verify
verify: ## In seconds, without a cluster: every test-plan id has a spec (dry run of the e2e suite) or a unit test (go test -list).
	@mkdir -p $(VERIFY_DIR)
	@# gofmt: two unformatted files once went unnoticed for weeks.
	@unformatted=$$(git ls-files -z '*.go' | xargs -0 gofmt -l); [[ -z "$$unformatted" ]] || { echo "not gofmt-formatted (run gofmt -w on them):" $$unformatted >&2; exit 1; }
	go build -o $(REPORT) ./cmd/testplan-report
	go test -c -tags e2e -o $(VERIFY_DIR)/e2e.test ./suites/e2e
	@echo "listing the specs: $(VERIFY_DIR)/e2e.test --ginkgo.dry-run (no cluster is started)"
	@$(VERIFY_DIR)/e2e.test --ginkgo.dry-run --ginkgo.no-color --ginkgo.json-report=$(VERIFY_DIR)/specs.json \
	  --artifacts=$(VERIFY_DIR) > $(VERIFY_DIR)/dry-run.log 2>&1 || { cat $(VERIFY_DIR)/dry-run.log; exit 1; }
	@# go test -c names every package without tests ("[no test files]"); CI reads such lines as a run of no test, so they stay out of the log.
	@echo "go test -c -o $(VERIFY_DIR)/unit/ ./controllers/..."
	@go test -c -o $(VERIFY_DIR)/unit/ ./controllers/... 2>&1 | { grep -v '\[no test files\]' || true; }
	@echo "listing the unit tests: go test -list . of each package of ./controllers/..., through its cached test binary"
	@go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./controllers/... | while read -r pkg; do \
	  $(VERIFY_DIR)/unit/$${pkg##*/}.test -test.list . | sed "s|^|$$pkg |"; done > $(VERIFY_DIR)/unit-list.txt
	$(REPORT) verify --specs $(VERIFY_DIR)/specs.json --unit-list $(VERIFY_DIR)/unit-list.txt

# The unit tests that need a real kube-apiserver and etcd (internal/apitest)
# run on the ones `make binaries` builds; under `make test` a missing binary
# fails such a test instead of skipping it.
APITEST_ENV := TEST_ASSET_KUBE_APISERVER=$(OUTPUT_DIR)/bin/kube/$(KUBE_VERSION)/kube-apiserver \
  TEST_ASSET_ETCD=$(OUTPUT_DIR)/bin/tools/etcd WAS_REQUIRE_APISERVER=1

.PHONY: test
test: tools binaries ## go vet and unit tests (some against a real kube-apiserver: builds binaries first); go test -json goes to $(ARTIFACTS)/unit.json, with unit.stamp.json (source tree, start time).
	@mkdir -p $(ARTIFACTS)
	go vet ./...
	go vet -tags e2e ./suites/e2e/
	@echo "running unit tests (go test -json -> $(ARTIFACTS)/unit.json, stamp in $(ARTIFACTS)/unit.stamp.json)"
	@rm -f $(ARTIFACTS)/unit.stamp.json
	@# The source id is taken before the tests build: the tree they test.
	source=$$($(REPORT) source-id || true); started=$$(date -u +%Y-%m-%dT%H:%M:%SZ); \
	  $(APITEST_ENV) go test -json -count=1 ./... > $(ARTIFACTS)/unit.json || true; \
	  $(REPORT) stamp --unit-json $(ARTIFACTS)/unit.json --source "$$source" --started "$$started"
	$(HARNESS) test-summary $(ARTIFACTS)/unit.json
	@# The tools in their own modules (hack/ociimage, hack/dradriver, hack/forger, hack/hostpath-provisioner): ./... does not reach them.
	for m in hack/ociimage hack/dradriver hack/forger hack/hostpath-provisioner; do (cd $$m && go vet ./... && go test -count=1 ./...) || exit 1; done

# `make fuzz FUZZTIME=60s` fuzzes every Go fuzz target that long, one after the other.
FUZZTIME ?= 30s

.PHONY: fuzz
fuzz: ## Run every Go fuzz target for FUZZTIME (30s) each; a finding fails and is kept in testdata/fuzz.
	FUZZTIME=$(FUZZTIME) hack/fuzz.sh

.PHONY: e2e
e2e: tools ## Build what is missing, start a local cluster (or use KUBECONFIG=), run every suite in PROCS=6 Ginkgo processes (Serial specs beside the others on clusters of their processes, OWN_CLUSTERS=0: alone, after; with KUBECONFIG= always alone, after), report. STRESS=1: see stress.
	$(if $(filter 1,$(STRESS)),hack/stress.sh,hack/e2e.sh)

.PHONY: soak
soak: tools ## Churn gang Deployments and StatefulSets for DURATION (default 10m): no duplicates, the KEPs' writes, flat RSS and goroutines; figures in $(ARTIFACTS)/soak.md.
	SOAK_DURATION=$(or $(DURATION),10m) LABEL_FILTER=Soak hack/e2e.sh

.PHONY: stress
stress: tools ## The suites under CPU load (STRESS_PROCS busy processes, default one per core), REPEAT=N times; flake rates in $(ARTIFACTS)/flakes.md.
	hack/stress.sh

.PHONY: conformance conformance-kubeconfig
conformance: conformance-kubeconfig tools ## Vendor mode: check, then test the existing cluster of KUBECONFIG= (no Disruptive specs unless ALLOW_DISRUPTIVE=1).
	@# The prerequisite check (with each given hook called once as `check`) fails in a second, before the suite compiles; the suite repeats it and records it.
	$(HARNESS) conformance --check-only --kubeconfig $(E2E_KUBECONFIG)
	hack/e2e.sh

conformance-kubeconfig:
	@[[ -n "$(E2E_KUBECONFIG)" ]] || { echo "make conformance needs the cluster to test: make conformance KUBECONFIG=/path/to/kubeconfig (an exported KUBECONFIG is ignored on purpose)" >&2; exit 2; }

.PHONY: parity parity-smoke
# make parity: Kubernetes' own sig-apps Deployment, ReplicaSet and StatefulSet
# e2e specs (built from the pinned k8s.io/kubernetes module), on local
# clusters, side by side: stock kube-controller-manager (the baseline), then
# the implementation without intent, with basic intent, with gang intent
# (fixtures/parity: MutatingAdmissionPolicies). `make parity KUBECONFIG=...`
# tests an existing cluster (vendor mode: one run at a time, policies removed
# afterwards; PARITY_BASELINE=dir compares with an earlier baseline run).
parity: binaries tools ## Upstream sig-apps e2e specs against the implementation, baseline/plain/basic/gang; $(ARTIFACTS)/parity/parity.md (hack/parity.sh; ~35 min on 2 cores).
	hack/parity.sh

# The parity smoke of .ci/run: a handful of specs per kind, in the gang mode
# against the baseline.
PARITY_SMOKE_FOCUS := \[sig-apps\] (Deployment (RecreateDeployment should delete old pods|deployment should delete old replica sets|Deployment should have a working scale subresource)|ReplicaSet (Replicaset should have a working scale subresource|should adopt matching pods on creation)|StatefulSet .*(should have a working scale subresource|should list, patch and delete a collection|should implement legacy replacement when the update strategy is OnDelete))
parity-smoke: binaries tools ## make parity on a few specs per kind, gang mode against the baseline (.ci/run).
	PARITY_MODES='baseline gang' PARITY_FOCUS='$(PARITY_SMOKE_FOCUS)' hack/parity.sh

# make parity on a kind cluster (hack/e2e-kind.sh, E2E_RUNNER=parity): real
# kubelets, so the specs that exec into pods or use hostPorts can pass; the
# specs' images built offline (hack/parity-images.sh); the baseline is stock
# kube-controller-manager on the same cluster (the kubeadm hooks).
.PHONY: parity-kind
parity-kind: tools ## make parity on a kind cluster built offline (real kubelets, a provisioning StorageClass; baseline through the kubeadm hooks; ~90 min); $(ARTIFACTS)/parity-kind/parity/parity.md; PARITY_FOCUS, PARITY_MODES, KEEP_CLUSTER=1 as for parity and e2e-kind.
	ARTIFACTS=$(ARTIFACTS)/parity-kind E2E_RUNNER=parity hack/e2e-kind.sh

mutation: binaries ## Self-test of the suite: each wrong variant in hack/mutation/ against the vendor-mode suite (hours; MUTATION_SCOPE=ids: each variant against its rule's specs, ~50 min; MUTANTS='01 07' for some); kill matrix in $(ARTIFACTS)/mutation.md.
	hack/mutation.sh

.PHONY: variants
variants: binaries ## Correct variants of the reference (hack/variants/: choices the KEPs allow that ours did not make) against the vendor-mode suite, which must PASS them as it passes the reference; matrix in $(ARTIFACTS)/variants.md. Same knobs as mutation.
	MUTATION_EXPECT=pass hack/mutation.sh

.PHONY: e2e-kind
e2e-kind: tools ## The suites on a kind cluster built offline (a running Docker, or root on Debian: installs docker.io; KIND_WORKERS=3; KIND_SKEW_WORKER=1 adds a previous-minor kubelet; see hack/e2e-kind.sh).
	hack/e2e-kind.sh

# The kind smoke of .ci/run: the Harness specs, one gang Deployment spec (D-E9)
# and one StatefulSet spec (S-I1) on kind, with the cached node image, and two
# Disruptive ids through the kubeadm hooks (hack/hooks/kubeadm), so that they
# cannot rot: D-P1 patches the reference's webhook DaemonSet, S-P8 rewrites
# kube-scheduler's static pod (gates off, then the preloaded v1.36 image).
# Its artifacts go to $(ARTIFACTS)/kind, apart from make e2e's.
KIND_SMOKE_FILTER ?= Harness || D-E9 || S-I1 || D-P1 || S-P8
.PHONY: kind-smoke
kind-smoke: tools ## make e2e-kind on a few specs' worth: the Harness specs, D-E9, S-I1, and D-P1, S-P8 through the kubeadm hooks; artifacts in $(ARTIFACTS)/kind.
	ARTIFACTS=$(ARTIFACTS)/kind LABEL_FILTER='$(KIND_SMOKE_FILTER)' PROCS=2 ALLOW_DISRUPTIVE=1 hack/e2e-kind.sh

.PHONY: kind-image
kind-image: ## A kind node image of KUBE_VERSION built offline from Debian packages and the Go module proxy (cached; needs a running Docker: hack/container-engine.sh up).
	hack/kind-image.sh

.PHONY: bench
bench: tools ## Run the Benchmark specs only; figures in $(ARTIFACTS)/bench_deployment.md.
	LABEL_FILTER=Benchmark hack/e2e.sh

.PHONY: bench-scale
bench-scale: tools ## The reference controllers at scale on 128 kwok nodes, gates on vs off (BENCH_N='25 50 100 200', BENCH_QUICK=1: N=25, BENCH_PPROF=1: CPU profiles, BENCH_SCHEDULER_QPS=500: the scheduler's client rate, default 50; BENCH_CONTROLLER_QPS: each controller's, default 50); $(ARTIFACTS)/bench-scale.md and .png.
	$(OUTPUT_DIR)/bin/bench-scale --artifacts $(ARTIFACTS) --output-dir $(OUTPUT_DIR) --kube-version $(KUBE_VERSION) \
	  $(if $(BENCH_N),--n '$(BENCH_N)') $(if $(filter 1,$(BENCH_QUICK)),--quick) $(if $(filter 1,$(BENCH_PPROF)),--cpu-profile)

.PHONY: report
report: tools ## Write $(ARTIFACTS)/testplan.md and .html from junit_e2e.xml and this run's unit.json (UNIT_JSON=file: that file, whichever run wrote it).
	$(REPORT) --junit $(ARTIFACTS)/junit_e2e.xml --out $(ARTIFACTS)/testplan.md \
	  $(if $(UNIT_JSON),--unit-json $(UNIT_JSON),--unit-json-if-fresh $(ARTIFACTS)/unit.json --run-started $(RUN_STARTED))

.PHONY: cluster-up
cluster-up: binaries tools ## Start a local cluster in the background (kubeconfig in _output/cluster).
	$(HARNESS) cluster up --dir $(CLUSTER_DIR) --output-dir $(OUTPUT_DIR) --kube-version $(KUBE_VERSION) --addon $(CURDIR)/controllers/config/localcluster-addon.yaml

.PHONY: cluster-down
cluster-down: tools ## Stop the cluster that cluster-up started.
	$(HARNESS) cluster down --dir $(CLUSTER_DIR)

.PHONY: cluster-status
cluster-status: tools ## Show the components of the cluster-up cluster.
	$(HARNESS) cluster status --dir $(CLUSTER_DIR)

.PHONY: clean
clean: cluster-down ## Remove build output and artifacts (keeps the Go caches).
	rm -rf $(OUTPUT_DIR) $(ARTIFACTS)
