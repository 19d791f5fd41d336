package features

import (
	"strings"
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	kubefeatures "k8s.io/kubernetes/pkg/features"
)

func TestGatesAreAlphaOffAndNeedGenericWorkload(t *testing.T) {
	for _, g := range []string{string(WorkloadWithDeployment), string(WorkloadWithStatefulSet)} {
		t.Run(g, func(t *testing.T) {
			gate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
			if gate.Enabled(WorkloadWithDeployment) || gate.Enabled(WorkloadWithStatefulSet) {
				t.Fatal("the gates must be off by default")
			}
			err := gate.SetFromMap(map[string]bool{g: true, "GenericWorkload": false})
			if err == nil {
				// Dependencies are checked when the gate set is validated.
				errs := gate.Validate()
				if len(errs) == 0 {
					t.Fatalf("%s=true with GenericWorkload=false was accepted", g)
				}
				err = errs[0]
			}
			if !strings.Contains(err.Error(), "GenericWorkload") {
				t.Errorf("error does not name the missing dependency: %v", err)
			}
			if err := gate.SetFromMap(map[string]bool{g: true, "GenericWorkload": true}); err != nil {
				t.Errorf("%s with GenericWorkload on: %v", g, err)
			}
		})
	}
}

// ProcessGates reads the gates at each call, not once: a controller built
// before a gate flips sees the flip.
func TestProcessGatesReadTheGatesOnEveryCall(t *testing.T) {
	for _, g := range []featuregate.Feature{WorkloadWithDeployment, WorkloadWithStatefulSet} {
		t.Run(string(g), func(t *testing.T) {
			gates := ProcessGates(g)
			if gates.Workload() {
				t.Fatalf("%s on by default", g)
			}
			featuregatetesting.SetFeatureGatesDuringTest(t, utilfeature.DefaultFeatureGate, featuregatetesting.FeatureOverrides{
				kubefeatures.GenericWorkload: true, g: true, kubefeatures.DRAWorkloadResourceClaims: true,
			})
			if !gates.Workload() || !gates.DRAWorkloadResourceClaims() {
				t.Errorf("after turning %s and DRAWorkloadResourceClaims on: Workload()=%v DRAWorkloadResourceClaims()=%v",
					g, gates.Workload(), gates.DRAWorkloadResourceClaims())
			}
		})
	}
}
