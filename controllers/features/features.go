// Package features registers the gates the reference implementation owns.
//
// No Kubernetes binary knows WorkloadWithDeployment or WorkloadWithStatefulSet
// yet (both KEPs are unmerged), so they live here, in the same component-base
// gate as the Kubernetes gates the embedded upstream controllers read
// (k8s.io/apiserver's DefaultFeatureGate), with the dependency the KEPs give
// them: neither can be on while GenericWorkload is off.
package features

import (
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	kubefeatures "k8s.io/kubernetes/pkg/features"
)

const (
	// WorkloadWithDeployment (KEP-6276, alpha): Deployments with spec.scheduling
	// get a Workload, and their ReplicaSets a PodGroup per revision.
	WorkloadWithDeployment featuregate.Feature = "WorkloadWithDeployment"
	// WorkloadWithStatefulSet (KEP-6277, alpha): StatefulSets with
	// spec.scheduling get one Workload and one PodGroup.
	WorkloadWithStatefulSet featuregate.Feature = "WorkloadWithStatefulSet"
)

func init() {
	runtime.Must(utilfeature.DefaultMutableFeatureGate.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{
		WorkloadWithDeployment:  {{Version: version.MustParse("1.37"), Default: false, PreRelease: featuregate.Alpha}},
		WorkloadWithStatefulSet: {{Version: version.MustParse("1.37"), Default: false, PreRelease: featuregate.Alpha}},
	}))
	runtime.Must(utilfeature.DefaultMutableFeatureGate.AddDependencies(map[featuregate.Feature][]featuregate.Feature{
		WorkloadWithDeployment:  {kubefeatures.GenericWorkload},
		WorkloadWithStatefulSet: {kubefeatures.GenericWorkload},
	}))
}

// Enabled reports whether a gate is on in this process.
func Enabled(f featuregate.Feature) bool { return utilfeature.DefaultFeatureGate.Enabled(f) }

// Gates are the gates a controller's hooks consult on every call rather than
// once at start: tests flip them on a running controller, and a process
// restarted with other gates behaves accordingly.
type Gates struct {
	// Workload is the controller's own KEP gate: WorkloadWithDeployment or
	// WorkloadWithStatefulSet. Off, every hook passes straight through.
	Workload func() bool
	// DRAWorkloadResourceClaims: PodGroups carry the intent's resource claims.
	DRAWorkloadResourceClaims func() bool
}

// ProcessGates reads this process's gates, with workload as the controller's
// own gate.
func ProcessGates(workload featuregate.Feature) Gates {
	return Gates{
		Workload:                  func() bool { return Enabled(workload) },
		DRAWorkloadResourceClaims: func() bool { return Enabled(kubefeatures.DRAWorkloadResourceClaims) },
	}
}
