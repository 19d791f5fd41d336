package framework

import (
	"os"
	"testing"

	"github.com/workload-aware/apps-harness/internal/apitest"
)

// Some unit tests run against a real kube-apiserver (internal/apitest): one
// for the package's test binary, stopped after the tests.
func TestMain(m *testing.M) { os.Exit(apitest.Run(m)) }
