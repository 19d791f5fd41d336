package framework

import "testing"

func TestSumCounterAddsEveryLabelSetOfOneMetricOnly(t *testing.T) {
	text := `# HELP statefulset_workload_creation_errors_total x
# TYPE statefulset_workload_creation_errors_total counter
statefulset_workload_creation_errors_total 3
# TYPE statefulset_workload_creation_errors_total_other counter
statefulset_workload_creation_errors_total_other 100
# TYPE was_deployment_scheduling_object_creation_errors_total counter
was_deployment_scheduling_object_creation_errors_total{kind="Workload"} 2
was_deployment_scheduling_object_creation_errors_total{kind="PodGroup"} 5
`
	for name, want := range map[string]float64{
		"statefulset_workload_creation_errors_total":             3,
		"was_deployment_scheduling_object_creation_errors_total": 7,
		"absent_total": 0,
	} {
		got, err := sumCounter([]byte(text), name)
		if err != nil || got != want {
			t.Errorf("sumCounter(%s) = %v, %v; want %v", name, got, err, want)
		}
	}
}
