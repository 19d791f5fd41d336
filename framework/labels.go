package framework

import (
	"fmt"
	"sync"

	"github.com/onsi/ginkgo/v2"

	"github.com/workload-aware/apps-harness/api/cluster"
	"github.com/workload-aware/apps-harness/testplan"
)

// Typed labels. Select with Ginkgo's label filter, for example
// --ginkgo.label-filter='KEP-6276 && !Disruptive' or 'Feature:GenericWorkload'.

// ID labels a spec with the test-plan item it proves (for example "D-I2").
// It panics at tree construction on an id the project's test plan lacks, so
// a typo fails the whole run at once instead of leaving an item MISSING.
func ID(ids ...string) ginkgo.Labels {
	plan, err := loadPlan()
	if err != nil {
		panic(err)
	}
	for _, id := range ids {
		if !testplan.IsID(id) { // the plan's own grammar, not a copy of it
			panic(fmt.Sprintf("framework.ID(%q): not a test-plan id (want e.g. D-I2 or S-U14)", id))
		}
		if _, ok := plan.Get(id); !ok {
			panic(fmt.Sprintf("framework.ID(%q): no such item in testplan/testplan.yaml", id))
		}
	}
	return ginkgo.Label(ids...)
}

// FeatureGate is a feature gate of api/cluster's table.
type FeatureGate string

// The gates specs are labelled with, as api/cluster names them.
const (
	GenericWorkload                 FeatureGate = cluster.GenericWorkload
	TopologyAwareWorkloadScheduling FeatureGate = cluster.TopologyAwareWorkloadScheduling
	DRAWorkloadResourceClaims       FeatureGate = cluster.DRAWorkloadResourceClaims
	CompositePodGroup               FeatureGate = cluster.CompositePodGroup
	WorkloadWithDeployment          FeatureGate = cluster.WorkloadWithDeployment
	WorkloadWithStatefulSet         FeatureGate = cluster.WorkloadWithStatefulSet
)

// WithFeatureGate labels a spec with the gates it needs, as "Feature:<gate>".
// It panics at tree construction on a gate api/cluster does not list: the
// local cluster would not turn it on, nor the prerequisite check look at it.
func WithFeatureGate(gates ...FeatureGate) ginkgo.Labels {
	out := make([]string, 0, len(gates))
	for _, g := range gates {
		if !cluster.IsGate(string(g)) {
			panic(fmt.Sprintf("framework.WithFeatureGate(%q): not a gate of api/cluster's table", g))
		}
		out = append(out, "Feature:"+string(g))
	}
	return ginkgo.Label(out...)
}

// KEP labels a spec with the KEP it belongs to ("KEP-6276" or "KEP-6277").
func KEP(number int) ginkgo.Labels { return ginkgo.Label(fmt.Sprintf("KEP-%d", number)) }

var (
	// Serial specs must not run beside others on one cluster (they use the
	// whole cluster's capacity or restart components). It adds Ginkgo's
	// Serial decorator too, unless each runs on a local cluster of its own
	// (owncluster.go), beside the others.
	Serial = serialDecorators()
	// Disruptive specs restart or reconfigure cluster components.
	Disruptive = ginkgo.Label("Disruptive")
	// Harness labels the harness's own specs, which prove the cluster works
	// as the KEP specs assume rather than a KEP item.
	Harness = ginkgo.Label("Harness")
	// KubeletSkew specs need a node whose kubelet is older than the control
	// plane (make e2e-kind KIND_SKEW_WORKER=1); without one they skip.
	KubeletSkew = ginkgo.Label("KubeletSkew")
)

// loadPlan parses the embedded test plan once per process.
var loadPlan = sync.OnceValues(testplan.Load)
