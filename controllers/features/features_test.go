package features

import (
	"strings"
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
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
