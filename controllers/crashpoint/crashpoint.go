// Package crashpoint gives the reference controller-manager deterministic
// crash points, so crash-recovery specs (D-E6, S-I8) can kill it exactly
// between two steps of the KEPs' workflows instead of hoping a SIGKILL lands
// there. A point is armed once per process (--crash-after); when the
// reconciler reaches it, the process logs one line and exits at once with
// ExitCode, leaving the partial state that step wrote.
package crashpoint

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"k8s.io/klog/v2"
)

// Point names the step after which the process exits.
type Point string

// The crash points, in workflow order. Each is reached right after the write
// it names succeeded, before the write that follows it.
const (
	// DeploymentAfterWorkloadCreate: the Deployment's Workload was created;
	// the ReplicaSet create it precedes was not sent.
	DeploymentAfterWorkloadCreate Point = "deployment/after-workload-create"
	// DeploymentAfterPodGroupCreate: the ReplicaSet's PodGroup was created;
	// the pod create it precedes was not sent.
	DeploymentAfterPodGroupCreate Point = "deployment/after-podgroup-create"
	// DeploymentBetweenMinCountUpdates: the Workload template's gang minCount
	// was updated (Deployment side); the ReplicaSet update and the PodGroup's
	// minCount update (ReplicaSet side) were not sent.
	DeploymentBetweenMinCountUpdates Point = "deployment/between-mincount-updates"
	// StatefulSetAfterWorkloadCreate: the StatefulSet's Workload was created;
	// its PodGroup was not (KEP-6277's "restart between Workload and PodGroup creation").
	StatefulSetAfterWorkloadCreate Point = "statefulset/after-workload-create"
	// StatefulSetAfterPodGroupCreate: the PodGroup was created; no pod was.
	StatefulSetAfterPodGroupCreate Point = "statefulset/after-podgroup-create"
	// StatefulSetBetweenMinCountUpdates: the Workload template's gang
	// minCount was updated; the PodGroup's was not, nor the pod write.
	StatefulSetBetweenMinCountUpdates Point = "statefulset/between-mincount-updates"
)

// Known lists every point Arm accepts.
var Known = []Point{
	DeploymentAfterWorkloadCreate, DeploymentAfterPodGroupCreate, DeploymentBetweenMinCountUpdates,
	StatefulSetAfterWorkloadCreate, StatefulSetAfterPodGroupCreate, StatefulSetBetweenMinCountUpdates,
}

// ExitCode is the distinctive status of a process that reached its armed
// point (neither 0, 1, 2 nor a signal's 128+n).
const ExitCode = 86

// LogPrefix starts the line written to stderr when a point is reached;
// harnesses look for LogPrefix + point in the component's log.
const LogPrefix = "crashpoint: reached "

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
	point, ns, _ := strings.Cut(spec, "@")
	if point != "" && !slices.Contains(Known, Point(point)) {
		return fmt.Errorf("unknown crash point %q; known: %s", point, strings.Join(knownNames(), ", "))
	}
	mu.Lock()
	defer mu.Unlock()
	armed, namespace = Point(point), ns
	return nil
}

func knownNames() []string {
	out := make([]string, 0, len(Known))
	for _, p := range Known {
		out = append(out, string(p))
	}
	return out
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
	fmt.Fprintf(os.Stderr, "%s%s (namespace %s); exiting with status %d as --crash-after asked\n", LogPrefix, p, ns, ExitCode)
	exit(ExitCode)
}
