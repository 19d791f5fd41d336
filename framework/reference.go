package framework

import (
	"fmt"
	"path/filepath"

	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// The local cluster runs the implementation under test as an add-on
// described by a file (TestContext.Addon): by default the reference
// implementation's controllers/config/localcluster-addon.yaml. The suite
// reads that file at run time and links none of the reference's code.

// DefaultAddon is the reference implementation's add-on descriptor, relative
// to the repository root (hack/e2e.sh passes it absolute).
const DefaultAddon = "controllers/config/localcluster-addon.yaml"

// The reference add-on's components, which the Disruptive specs restart with
// other gates, flags or binaries. The descriptor names them; a unit test
// keeps these equal to it.
const (
	// ReferenceWebhook is the admission side (what the KEPs put in kube-apiserver).
	ReferenceWebhook localcluster.Component = "was-webhook"
	// ReferenceControllerManager is the controller side (what the KEPs put
	// in kube-controller-manager).
	ReferenceControllerManager localcluster.Component = "was-controller-manager"
)

// localClusterConfig is the suite's local cluster: api/cluster's gates and
// API versions, TestContext's binaries and timeouts, and the add-on.
func localClusterConfig() (localcluster.Config, error) {
	cfg := localcluster.DefaultConfig(TestContext.OutputDir, TestContext.KubeVersion, filepath.Join(TestContext.Artifacts, "cluster"))
	cfg.ReadyTimeout = TestContext.Timeouts.ClusterStart
	if TestContext.Addon == "" {
		return cfg, nil
	}
	addon, err := localcluster.LoadImplementation(TestContext.Addon, filepath.Join(TestContext.OutputDir, "bin"))
	if err != nil {
		return cfg, fmt.Errorf("%w (--addon names the implementation's add-on descriptor; --addon= runs none)", err)
	}
	cfg.Addons = append(cfg.Addons, addon)
	return cfg, nil
}
