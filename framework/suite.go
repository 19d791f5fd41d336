package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/onsi/ginkgo/v2"

	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// suiteState is what Ginkgo process 1 hands every process of a run, parallel
// or not: where the cluster is, and the timeouts calibrated on it. The
// calibration is measured once, on the idle cluster before any spec, rather
// than by each process at once (which would measure the processes' own
// probes and give every process different windows).
type suiteState struct {
	Kubeconfig  string       `json:"kubeconfig"`
	Calibration *Calibration `json:"calibration,omitempty"`
	// LocalClusterDir is the work directory of the cluster process 1 started
	// (empty against an existing cluster): the other processes attach to it
	// to read its configuration, logs and audit log. Only process 1 owns its
	// components; specs that restart them are Serial, so they run there.
	LocalClusterDir string `json:"localClusterDir,omitempty"`
}

// SetupSuite is the first function of the suite's SynchronizedBeforeSuite
// (process 1 only): it starts or checks the cluster (SetupCluster), measures
// it (CalibrateTimeouts) and returns the state for ConnectSuite.
func SetupSuite(ctx context.Context) []byte {
	st := suiteState{Kubeconfig: string(SetupCluster(ctx))}
	if LocalCluster != nil {
		st.LocalClusterDir = LocalCluster.Config().WorkDir
	}
	ConnectCluster([]byte(st.Kubeconfig))
	// Windows and bounds follow the cluster's measured speed.
	c, err := CalibrateTimeouts(ctx, ClientSet())
	if err != nil {
		fmt.Fprintf(os.Stderr, "[calibration] failed, keeping the configured timeouts: %v\n", err)
	} else {
		fmt.Fprintf(os.Stderr, "[calibration] create-to-bound %v (slowest %v): Eventually bounds x%.2f, nothing-happens windows %v\n",
			c.Samples, c.Slowest, c.Scale, c.Timeouts.StaysUnbound)
		st.Calibration = &c
	}
	b, err := json.Marshal(st)
	if err != nil {
		ginkgo.Fail(fmt.Sprintf("encoding the suite state: %v", err))
	}
	return b
}

// ConnectSuite is the second function of the suite's SynchronizedBeforeSuite
// (every process): it connects to the cluster and applies the calibration.
func ConnectSuite(data []byte) {
	var st suiteState
	if err := json.Unmarshal(data, &st); err != nil {
		ginkgo.Fail(fmt.Sprintf("decoding the suite state from process 1: %v", err))
	}
	if clientSet == nil { // process 1 connected in SetupSuite already
		ConnectCluster([]byte(st.Kubeconfig))
	}
	if LocalCluster == nil && st.LocalClusterDir != "" {
		c, err := localcluster.Attach(st.LocalClusterDir, nil)
		if err != nil {
			ginkgo.Fail(fmt.Sprintf("attaching to the local cluster process 1 started: %v", err))
		}
		LocalCluster = c
	}
	if st.Calibration != nil {
		TestContext.Timeouts = st.Calibration.Timeouts
	}
}
