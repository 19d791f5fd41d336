package cluster

import (
	"maps"
	"testing"
)

func TestGateSetsSplitTheTable(t *testing.T) {
	kube, impl := KubeFeatureGates(), ImplementationFeatureGates()
	if len(kube)+len(impl) != len(Gates) || len(AllFeatureGates()) != len(Gates) {
		t.Fatalf("kube %v + implementation %v do not partition %d gates", kube, impl, len(Gates))
	}
	for name := range maps.Keys(impl) {
		if kube[name] {
			t.Errorf("%s is both a Kubernetes and an implementation gate", name)
		}
	}
	if !kube[GenericWorkload] || !impl[WorkloadWithDeployment] || !impl[WorkloadWithStatefulSet] {
		t.Errorf("kube %v, implementation %v", kube, impl)
	}
	if !IsGate(CompositePodGroup) || IsGate("NoSuchGate") {
		t.Error("IsGate disagrees with Gates")
	}
}

func TestRuntimeConfigServesEveryAPI(t *testing.T) {
	rc := RuntimeConfig()
	if len(rc) != len(APIs) || rc["scheduling.k8s.io/v1beta1"] != "true" {
		t.Errorf("RuntimeConfig() = %v", rc)
	}
	if got := KubeControllers(); got != "*,-deployment-controller,-replicaset-controller,-statefulset-controller" {
		t.Errorf("KubeControllers() = %q", got)
	}
}
