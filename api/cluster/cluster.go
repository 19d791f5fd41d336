// Package cluster is the one table of what a Kubernetes cluster needs for
// Workload-Aware Scheduling (KEP-6276, KEP-6277): the feature gates, the API
// group versions (kube-apiserver's --runtime-config), the kube-controller-manager
// controllers an implementation of the KEPs replaces, and the Kubernetes
// versions this project builds and runs.
//
// Every place that sets or checks these reads them from here: the harness's
// local cluster (pkg/localcluster defaults), the vendor-mode prerequisite
// check and the Feature: labels (framework), and the drift tests of the kind
// configuration (kind-config/) and of the install manifests (deploy/). Change
// a gate here and those tests say which file to update.
//
// The package imports nothing, so the reference implementation may read it
// too.
package cluster

import (
	"maps"
	"slices"
)

// Feature gate names.
const (
	// GenericWorkload serves the Workload and PodGroup APIs and turns on gang
	// scheduling (Kubernetes 1.37, beta, off by default).
	GenericWorkload = "GenericWorkload"
	// TopologyAwareWorkloadScheduling places a gang within one topology domain.
	TopologyAwareWorkloadScheduling = "TopologyAwareWorkloadScheduling"
	// DRAWorkloadResourceClaims allocates ResourceClaims per PodGroup.
	DRAWorkloadResourceClaims = "DRAWorkloadResourceClaims"
	// CompositePodGroup (alpha) is what StatefulSets composed by a parent
	// controller attach to.
	CompositePodGroup = "CompositePodGroup"
	// WorkloadWithDeployment is KEP-6276's gate.
	WorkloadWithDeployment = "WorkloadWithDeployment"
	// WorkloadWithStatefulSet is KEP-6277's gate.
	WorkloadWithStatefulSet = "WorkloadWithStatefulSet"
)

// Gate is one feature gate and what a cluster without it loses.
type Gate struct {
	Name string
	// Implementation marks the KEPs' own gates: no Kubernetes 1.37 binary
	// knows them (and refuses them in --feature-gates), so only the
	// implementation's components take them. The others are Kubernetes gates,
	// set on kube-apiserver, kube-controller-manager and kube-scheduler.
	Implementation bool
	// Essential gates are those without which no spec can run.
	Essential bool
	// Without says what a cluster with the gate off loses; empty when the
	// prerequisite check has nothing to add.
	Without string
}

// Gates lists every gate the KEPs need, all of them on.
var Gates = []Gate{
	{Name: GenericWorkload, Essential: true,
		Without: "the Workload and PodGroup APIs are off: start kube-apiserver, kube-scheduler and kube-controller-manager with --feature-gates=GenericWorkload=true"},
	{Name: TopologyAwareWorkloadScheduling, Without: "specs labelled Feature:TopologyAwareWorkloadScheduling will fail"},
	{Name: DRAWorkloadResourceClaims, Without: "specs labelled Feature:DRAWorkloadResourceClaims will fail"},
	{Name: CompositePodGroup, Without: "specs labelled Feature:CompositePodGroup will fail"},
	{Name: WorkloadWithDeployment, Implementation: true},
	{Name: WorkloadWithStatefulSet, Implementation: true},
}

// GenericWorkloadDependents are the gates that cannot be on while
// GenericWorkload is off: Kubernetes 1.37's (component-base dependencies of
// k8s.io/kubernetes/pkg/features, checked by a test) and the KEPs' own
// (KEP-6276: "The gate depends on GenericWorkload being enabled"; KEP-6277:
// "depends on GenericWorkload feature gate"). A component started with one of
// them on and GenericWorkload off refuses to start, so a spec that turns
// GenericWorkload off on a component must turn these off with it, except
// the one it means to test.
var GenericWorkloadDependents = []string{
	"PodGroupPreemptionPolicy", CompositePodGroup, "WorkloadWithJob", TopologyAwareWorkloadScheduling, DRAWorkloadResourceClaims,
	WorkloadWithDeployment, WorkloadWithStatefulSet,
}

// KubeFeatureGates are the Kubernetes gates of Gates, all on: the
// --feature-gates of kube-apiserver, kube-controller-manager and kube-scheduler.
func KubeFeatureGates() map[string]bool { return gatesWhere(false) }

// ImplementationFeatureGates are the KEPs' own gates, all on: an
// implementation's components take them on top of KubeFeatureGates.
func ImplementationFeatureGates() map[string]bool { return gatesWhere(true) }

// AllFeatureGates are every gate of Gates, on: an implementation's
// components' --feature-gates.
func AllFeatureGates() map[string]bool {
	out := KubeFeatureGates()
	maps.Copy(out, ImplementationFeatureGates())
	return out
}

func gatesWhere(implementation bool) map[string]bool {
	out := map[string]bool{}
	for _, g := range Gates {
		if g.Implementation == implementation {
			out[g.Name] = true
		}
	}
	return out
}

// IsGate reports whether name is in Gates.
func IsGate(name string) bool {
	return slices.ContainsFunc(Gates, func(g Gate) bool { return g.Name == name })
}

// API is an API group version the suite uses.
type API struct {
	GroupVersion string
	// Resources are those the suite reads or writes.
	Resources []string
	// Required: without it no spec can run.
	Required bool
	// Without says what a cluster that does not serve it loses, and how to fix it.
	Without string
}

// APIs are the group versions the suite uses; each is served through
// kube-apiserver's --runtime-config (RuntimeConfig).
var APIs = []API{
	// Disabled by default in 1.37.
	{GroupVersion: "scheduling.k8s.io/v1beta1", Resources: []string{"workloads", "podgroups"}, Required: true,
		Without: "start kube-apiserver with --runtime-config=scheduling.k8s.io/v1beta1=true and --feature-gates=GenericWorkload=true"},
	{GroupVersion: "resource.k8s.io/v1", Resources: []string{"deviceclasses", "resourceclaims", "resourceclaimtemplates", "resourceslices"},
		Without: "DRA specs (Feature:DRAWorkloadResourceClaims) will fail; serve resource.k8s.io/v1"},
	// CompositePodGroup lives only in v1alpha3 in 1.37.
	{GroupVersion: "scheduling.k8s.io/v1alpha3", Resources: []string{"compositepodgroups"},
		Without: "CompositePodGroup specs will fail; start kube-apiserver with --runtime-config=scheduling.k8s.io/v1alpha3=true and --feature-gates=CompositePodGroup=true"},
}

// RuntimeConfig is kube-apiserver's --runtime-config: every group version of APIs served.
func RuntimeConfig() map[string]string {
	out := map[string]string{}
	for _, a := range APIs {
		out[a.GroupVersion] = "true"
	}
	return out
}

// ReplacedKubeControllers are the kube-controller-manager controllers an
// implementation of the KEPs runs in their place until the KEPs are merged:
// kube-controller-manager runs with --controllers=*,-<each of these>.
var ReplacedKubeControllers = []string{"deployment-controller", "replicaset-controller", "statefulset-controller"}

// KubeControllers is kube-controller-manager's --controllers value when
// the implementation runs beside it: every controller but ReplacedKubeControllers.
func KubeControllers() string {
	v := "*"
	for _, name := range ReplacedKubeControllers {
		v += ",-" + name
	}
	return v
}
