package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"

	"github.com/workload-aware/apps-harness/pkg/localcluster"
	"github.com/workload-aware/apps-harness/testplan"
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
	// components; specs that restart them are Serial, so they run there, or
	// on a cluster their own process started (owncluster.go).
	LocalClusterDir string `json:"localClusterDir,omitempty"`
	// NotImplemented maps each KEP label ("KEP-6276") the prerequisite
	// check found not implemented to its reason (vendor mode only).
	NotImplemented map[string]string `json:"notImplemented,omitempty"`
}

// notImplemented is this process's copy of suiteState.NotImplemented.
var notImplemented map[string]string

// Every spec labelled with a KEP the implementation under test does not
// implement skips before any other setup of it runs, saying why; the report
// shows its ids NOT-IMPLEMENTED. Specs without a KEP label (the Harness
// specs: install, packaging) never skip for this. Registered here, at the top
// level, so that it covers every spec of the suite whichever helpers it uses.
var _ = ginkgo.BeforeEach(func() {
	if reason, skip := notImplementedReason(ginkgo.CurrentSpecReport().Labels(), notImplemented); skip {
		ginkgo.Skip(reason)
	}
})

// A Serial spec moves to a local cluster of its own first, when own
// clusters are on (owncluster.go); registered after the skip above, so a
// spec that skips starts nothing.
var _ = ginkgo.BeforeEach(onOwnCluster)

// notImplementedReason is the skip message for a spec with labels, when one
// of them is a KEP in notImpl: testplan.NotImplementedPrefix, the KEP and
// the check's reason (a spec of both KEPs names each missing one).
func notImplementedReason(labels []string, notImpl map[string]string) (string, bool) {
	var why []string
	for _, l := range labels {
		if reason, ok := notImpl[l]; ok && !slices.Contains(why, l+": "+reason) {
			why = append(why, l+": "+reason)
		}
	}
	if len(why) == 0 {
		return "", false
	}
	return testplan.NotImplementedPrefix + strings.Join(why, "; "), true
}

// SetupSuite is the first function of the suite's SynchronizedBeforeSuite
// (process 1 only): it starts or checks the cluster (SetupCluster), measures
// it (CalibrateTimeouts) and returns the state for ConnectSuite.
func SetupSuite(ctx context.Context) []byte {
	st := suiteState{Kubeconfig: string(SetupCluster(ctx)), NotImplemented: notImplemented}
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
	notImplemented = st.NotImplemented
	for kep, reason := range notImplemented {
		ginkgo.GinkgoWriter.Printf("%s is not implemented by the implementation under test (%s): its specs skip\n", kep, reason)
	}
	setUpOwnClusters()
}
