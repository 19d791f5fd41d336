module github.com/workload-aware/apps-harness/hack/forger

go 1.26.0
