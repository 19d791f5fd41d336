package cluster

// The Kubernetes versions of the project. hack/versions.sh prints them for
// the Makefile and the hack scripts: KubeVersion from go.mod, SkewKubeVersion
// from the line below (keep it one line of this form); versions_test.go
// keeps all of them equal.
const (
	// KubeVersion is the Kubernetes release whose control plane the harness
	// builds and runs: the version of k8s.io/kubernetes in go.mod, which the
	// reference implementation links.
	KubeVersion = "v1.37.2"
	// SkewKubeVersion is a release of the previous minor, whose kube-scheduler
	// the version-skew specs run beside KubeVersion's apiserver.
	SkewKubeVersion = "v1.36.3"
)
