// Package framework is what the suites share: the suite's configuration
// (cluster, artifacts, timeouts), a namespace per spec with cleanup, a dump of
// the namespace's workload objects on failure, typed labels, and waits that
// say what they waited for.
//
// It follows the Kubernetes e2e framework (one namespace per spec,
// DeferCleanup, labels for feature gates, Serial and Disruptive) and
// cluster-api's test/framework (specs exported so other projects can import
// them, one Input struct per helper, timeouts from configuration).
package framework
