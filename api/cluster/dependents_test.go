package cluster

import (
	"slices"
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	_ "k8s.io/kubernetes/pkg/features" // registers Kubernetes' gates and their dependencies
)

// The list must follow the Kubernetes version the project builds: a new 1.37
// gate that depends on GenericWorkload and is not listed would make every
// GenericWorkload=false restart of a component refuse for that gate's sake.
func TestGenericWorkloadDependentsFollowKubernetes(t *testing.T) {
	var kube []string
	for f, deps := range utilfeature.DefaultFeatureGate.Dependencies() {
		if slices.Contains(deps, GenericWorkload) {
			kube = append(kube, string(f))
		}
	}
	for _, g := range kube {
		if !slices.Contains(GenericWorkloadDependents, g) {
			t.Errorf("%s depends on GenericWorkload in k8s.io/kubernetes/pkg/features: add it to GenericWorkloadDependents", g)
		}
	}
	for _, g := range GenericWorkloadDependents {
		if !slices.Contains(kube, g) && g != WorkloadWithDeployment && g != WorkloadWithStatefulSet {
			t.Errorf("%s is listed in GenericWorkloadDependents, but k8s.io/kubernetes/pkg/features does not make it depend on GenericWorkload", g)
		}
	}
}
