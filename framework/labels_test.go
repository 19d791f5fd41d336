package framework

import (
	"slices"
	"testing"
)

func TestWithFeatureGateRefusesGatesOutsideTheTable(t *testing.T) {
	if got := WithFeatureGate(GenericWorkload, WorkloadWithStatefulSet); !slices.Equal([]string(got), []string{"Feature:GenericWorkload", "Feature:WorkloadWithStatefulSet"}) {
		t.Errorf("labels %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("a gate api/cluster does not list was accepted")
		}
	}()
	WithFeatureGate("NoSuchGate")
}
