// Package crashpoint arms and fires the reference controller-manager's crash
// points (--crash-after). The points, the flag syntax, the exit code and the
// log marker are a contract with the harness and live in api/crashpoint;
// this package re-exports the names its call sites use.
//
// A point is armed once per process (Arm); when the reconciler reaches it
// (Reached), the process logs one line and exits at once with ExitCode,
// leaving the partial state that step wrote.
package crashpoint

import (
	"fmt"
	"os"
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
	// exit is replaced by tests.
	exit = os.Exit
)

// Arm arms one point, given as "<point>" or "<point>@<namespace>" (the latter
// only fires for objects in that namespace, so other specs' objects cannot
// trigger it). An empty spec disarms. An unknown point is an error naming
// the known ones.
func Arm(spec string) error {
	point, ns, err := crashpoint.ParseArg(spec)
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	armed, namespace = point, ns
	return nil
}

// Reached exits the process with ExitCode when p is the armed point (and ns
// its namespace, if one was given); otherwise it does nothing. Call it right
// after the write the point names succeeded.
func Reached(p Point, ns string) {
	mu.Lock()
	fire := armed != "" && armed == p && (namespace == "" || namespace == ns)
	mu.Unlock()
	if !fire {
		return
	}
	// klog buffers; flush what came before, then write the marker unbuffered.
	klog.Flush()
	fmt.Fprintf(os.Stderr, "%s%s (namespace %s); exiting with status %d as --%s asked\n", crashpoint.LogPrefix, p, ns, ExitCode, crashpoint.Flag)
	exit(ExitCode)
}
