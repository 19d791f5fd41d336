// Package crashpoint arms and fires the reference controller-manager's crash
// points (--crash-after). The points, the flag syntax, the exit code and the
// log marker are a contract with the harness and live in api/crashpoint;
// this package re-exports the names its call sites use.
//
// A point is armed once per process (Arm); when the reconciler reaches it
// (Reached), the process logs one line and exits at once with ExitCode,
// leaving the partial state that step wrote. A write point (write/<n>) is
// reached by the transport WrapTransport wraps around every client: right
// after the n-th counted write's answer arrived, before the caller sees it.
package crashpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/klog/v2"

	"github.com/workload-aware/apps-harness/api/crashpoint"
)

// Point names the step after which the process exits.
type Point = crashpoint.Point

// The points, as api/crashpoint defines them.
const (
	DeploymentAfterWorkloadCreate     = crashpoint.DeploymentAfterWorkloadCreate
	DeploymentAfterPodGroupCreate     = crashpoint.DeploymentAfterPodGroupCreate
	DeploymentBetweenMinCountUpdates  = crashpoint.DeploymentBetweenMinCountUpdates
	StatefulSetAfterWorkloadCreate    = crashpoint.StatefulSetAfterWorkloadCreate
	StatefulSetAfterPodGroupCreate    = crashpoint.StatefulSetAfterPodGroupCreate
	StatefulSetBetweenMinCountUpdates = crashpoint.StatefulSetBetweenMinCountUpdates
	ExitCode                          = crashpoint.ExitCode
)

// Known lists every point Arm accepts.
var Known = crashpoint.Known

var (
	mu        sync.Mutex
	armed     Point
	namespace string
	spec      string
	// writes counts the counted writes since Arm, for a write point.
	writes int
	// exit is replaced by tests.
	exit = os.Exit
	// MarkerDir is where a container remembers, across the kubelet's restarts
	// of it, that it reached its armed point: deploy/ mounts an emptyDir
	// there. Where it does not exist (the local cluster's processes, which
	// nothing restarts) nothing is remembered.
	MarkerDir = "/var/run/was-crashpoint"
)

// markerFile records the armed spec that was reached.
func markerFile() string { return filepath.Join(MarkerDir, "reached") }

// ReachedBefore says whether this container already reached armed (its
// --crash-after value) in an earlier run. The kubelet restarts a crashed
// container with the same flags; such a run must not act, or it would
// repair the partial state before the harness reads it: a crash leaves the
// controllers down until they are started again without --crash-after (a
// new pod), as on the local cluster.
func ReachedBefore(armed string) bool {
	if armed == "" {
		return false
	}
	data, err := os.ReadFile(markerFile())
	return err == nil && string(data) == armed
}

// Arm arms one point, given as "<point>" or "<point>@<namespace>" (the latter
// only fires for objects in that namespace, so other specs' objects cannot
// trigger it). An empty spec disarms. An unknown point is an error naming
// the known ones.
func Arm(arg string) error {
	point, ns, err := crashpoint.ParseArg(arg)
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	armed, namespace, spec, writes = point, ns, arg, 0
	return nil
}

// Reached exits the process with ExitCode when p is the armed point (and ns
// its namespace, if one was given); otherwise it does nothing. Call it right
// after the write the point names succeeded.
func Reached(p Point, ns string) {
	mu.Lock()
	fire := armed != "" && armed == p && (namespace == "" || namespace == ns)
	reached := spec
	mu.Unlock()
	if fire {
		exitAt(p, ns, reached, "")
	}
}

// exitAt records and logs that p was reached, then exits with ExitCode.
func exitAt(p Point, ns, reached, what string) {
	if what != "" {
		what = ": " + what
	}
	if _, err := os.Stat(MarkerDir); err == nil {
		if err := os.WriteFile(markerFile(), []byte(reached), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "crashpoint: recording the crash in %s: %v\n", markerFile(), err)
		}
	}
	// klog buffers; flush what came before, then write the marker unbuffered.
	klog.Flush()
	fmt.Fprintf(os.Stderr, "%s(namespace %s)%s; exiting with status %d as --%s asked\n", crashpoint.Marker(p), ns, what, ExitCode, crashpoint.Flag)
	exit(ExitCode)
}
