package framework

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
)

func TestIDLabelsKnownTestPlanItems(t *testing.T) {
	labels := ID("D-I2", "S-U14")
	if got := strings.Join(labels, ","); got != "D-I2,S-U14" {
		t.Errorf("ID labels = %q", got)
	}
}

func TestIDRefusesWhatIsNotInThePlan(t *testing.T) {
	for _, bad := range []string{"D-I99", "X-1", "d-i2", "D-I2 "} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("ID(%q) did not panic", bad)
				}
			}()
			ID(bad)
		}()
	}
}

func TestTypedLabels(t *testing.T) {
	if got := WithFeatureGate(GenericWorkload, WorkloadWithDeployment); strings.Join(got, ",") != "Feature:GenericWorkload,Feature:WorkloadWithDeployment" {
		t.Errorf("WithFeatureGate = %v", got)
	}
	if got := KEP(6276); got[0] != "KEP-6276" {
		t.Errorf("KEP = %v", got)
	}
}

// TestSerialDecorators: Serial carries Ginkgo's Serial decorator, so a
// parallel run respects it, unless each Serial spec runs on a local cluster
// of its own; then it runs beside the others and keeps the label.
func TestSerialDecorators(t *testing.T) {
	t.Setenv(OwnClustersEnv, "")
	if d := serialDecorators(); d[0] != ginkgo.Serial || !slices.Contains(d[1].(ginkgo.Labels), SerialLabel) {
		t.Errorf("Serial = %v, want Ginkgo's Serial decorator and the label", d)
	}
	t.Setenv(OwnClustersEnv, "3")
	d := serialDecorators()
	if slices.Contains(d, any(ginkgo.Serial)) || !slices.Contains(d[0].(ginkgo.Labels), SerialLabel) {
		t.Errorf("Serial with own clusters = %v, want the label without Ginkgo's Serial", d)
	}
}

func TestTimeoutsScaleEveryBoundButPoll(t *testing.T) {
	d := DefaultTimeouts()
	s := d.Scaled(2)
	if s.PodsBound != 2*d.PodsBound || s.Cleanup != 2*d.Cleanup || s.StaysUnbound != 2*d.StaysUnbound || s.ClusterStart != 2*d.ClusterStart {
		t.Errorf("Scaled(2) = %+v from %+v", s, d)
	}
	if s.Poll != d.Poll {
		t.Errorf("Poll scaled to %s; polling faster or slower does not make a wait more patient", s.Poll)
	}
	if d.Scaled(0) != d || d.Scaled(-1) != d {
		t.Error("a non-positive scale must leave timeouts unchanged")
	}
	if d.StaysUnbound < time.Second {
		t.Errorf("StaysUnbound %s is too short to show that nothing binds", d.StaysUnbound)
	}
}
