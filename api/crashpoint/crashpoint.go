// Package crashpoint names the deterministic crash points of an
// implementation's controllers: the contract between the harness's
// crash-recovery specs (D-E6, S-I8, S-I5) and the reference implementation
// (controllers/crashpoint arms and fires them).
//
// A point names the step of the KEPs' workflows after which the controller
// process exits, so a spec can kill it exactly between two writes instead of
// hoping a SIGKILL lands there. It is armed with the controller-manager flag
// Flag, "<point>" or "<point>@<namespace>" (Arg). When the process reaches its
// armed point it writes LogPrefix+point to stderr and exits with ExitCode,
// leaving the partial state that step wrote.
package crashpoint

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
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

// Write points are not named steps: AfterWrite(n) is reached right after
// the n-th object write the process sent for the armed namespace succeeded,
// whatever that write was. A harness that arms n = 1, 2, ... until a
// sequence ends without reaching n crashes the controller between every two
// writes of that sequence, without a hand-picked list (suites/upgrade's
// crash sweep).
//
// A counted write is a POST, PUT, PATCH or DELETE of a namespaced object
// (/api/v1/namespaces/<ns>/... or /apis/<group>/<version>/namespaces/<ns>/...)
// answered 2xx, except Events and the status subresource: a status write is a
// progress report the controllers recompute from scratch on every sync, so
// a crash after it is the crash before the next object write, and counting
// it would make the count depend on how fast kubelets report.
const WritePrefix = "write/"

// AfterWrite is the write point reached after the n-th counted write (n >= 1).
func AfterWrite(n int) Point { return Point(WritePrefix + strconv.Itoa(n)) }

// WriteOrdinal is n for AfterWrite(n); ok is false for a named point.
func (p Point) WriteOrdinal() (n int, ok bool) {
	digits, found := strings.CutPrefix(string(p), WritePrefix)
	if !found {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 || strconv.Itoa(n) != digits {
		return 0, false
	}
	return n, true
}

// Marker is the text a harness finds in the component's log when p was
// reached: LogPrefix, the point and the space that ends it (so write/1 is
// not found in a log that reached write/10).
func Marker(p Point) string { return LogPrefix + string(p) + " " }

// Known lists every named point.
var Known = []Point{
	DeploymentAfterWorkloadCreate, DeploymentAfterPodGroupCreate, DeploymentBetweenMinCountUpdates,
	StatefulSetAfterWorkloadCreate, StatefulSetAfterPodGroupCreate, StatefulSetBetweenMinCountUpdates,
}

// Flag is the controller-manager flag (without "--") that arms a point.
const Flag = "crash-after"

// ExitCode is the distinctive status of a process that reached its armed
// point (neither 0, 1, 2 nor a signal's 128+n).
const ExitCode = 86

// LogPrefix starts the line written to stderr when a point is reached;
// harnesses look for LogPrefix + point in the component's log.
const LogPrefix = "crashpoint: reached "

// Arg is Flag's value that arms p for objects in namespace only (all
// namespaces when it is empty), so other specs' objects cannot trigger it.
func Arg(p Point, namespace string) string {
	if namespace == "" {
		return string(p)
	}
	return string(p) + "@" + namespace
}

// ParseArg splits Flag's value into its point and namespace. An empty value
// arms nothing; an unknown point is an error naming the known ones.
func ParseArg(value string) (Point, string, error) {
	point, namespace, _ := strings.Cut(value, "@")
	if _, write := Point(point).WriteOrdinal(); point != "" && !write && !slices.Contains(Known, Point(point)) {
		return "", "", fmt.Errorf("unknown crash point %q; known: %s, or %s<n> (n >= 1: after the n-th object write)", point, strings.Join(knownNames(), ", "), WritePrefix)
	}
	return Point(point), namespace, nil
}

func knownNames() []string {
	out := make([]string, 0, len(Known))
	for _, p := range Known {
		out = append(out, string(p))
	}
	return out
}
