# syntax=docker/dockerfile:1
# The suite image for the Sonobuoy plugin (sonobuoy/plugin.yaml): the compiled
# e2e.test and sonobuoy/run.sh, which builds an in-cluster kubeconfig, runs the
# suite and hands the JUnit report to Sonobuoy. The debug variant of
# distroless has the busybox shell run.sh needs. Build from the repository root:
#   docker build -f build/e2e.Dockerfile -t localhost/was-e2e:dev .
FROM golang:1.26 AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go test -c -trimpath -tags e2e -o /out/e2e.test ./suites/e2e && \
    go build -trimpath -o /out/testplan-report ./cmd/testplan-report

FROM gcr.io/distroless/static:debug-nonroot
COPY --from=build /out/e2e.test /e2e.test
COPY --from=build /out/testplan-report /testplan-report
COPY sonobuoy/run.sh /run.sh
USER 65532:65532
ENTRYPOINT ["/busybox/sh", "/run.sh"]
