package framework

import schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"

// WorkloadMinCount reads the gang minCount of a Workload's first
// PodGroupTemplate (0 when basic or without templates).
func WorkloadMinCount(w *schedulingv1beta1.Workload) int32 {
	if len(w.Spec.PodGroupTemplates) == 0 || w.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang == nil {
		return 0
	}
	return w.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount
}

// PodGroupMinCount reads a PodGroup's gang minCount (0 when basic).
func PodGroupMinCount(pg *schedulingv1beta1.PodGroup) int32 {
	if pg.Spec.SchedulingPolicy.Gang == nil {
		return 0
	}
	return pg.Spec.SchedulingPolicy.Gang.MinCount
}

// PodGroupProtectionFinalizer keeps a PodGroup while pods still name it:
// 1.37's PodGroupProtection admission plugin adds it to every PodGroup, and
// KEP-6277 has the StatefulSet controller send it in its create as well.
const PodGroupProtectionFinalizer = "scheduling.k8s.io/podgroup-protection"
