package benchscale

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// ControllerUsers are the identities the implementation's controllers act
// as on the local cluster: the process's own (informers, leader election)
// and the kube-system service account of each controller, as
// kube-controller-manager's --use-service-account-credentials does.
var ControllerUsers = []string{
	"was-controller-manager",
	"system:serviceaccount:kube-system:deployment-controller",
	"system:serviceaccount:kube-system:replicaset-controller",
	"system:serviceaccount:kube-system:statefulset-controller",
}

// SchedulerUser is kube-scheduler's identity on the local cluster. Its
// requests are counted apart from the controllers': they explain the
// scheduler's share of the time to bound (bindings, status patches of pods
// that wait for their gang, events).
const SchedulerUser = "system:kube-scheduler"

// AuditPolicy widens the local cluster's default policy for the benchmark:
// every request of users at Metadata level (who, verb, resource; no bodies,
// so the log stays small), and, as by default, every write to Workloads and
// PodGroups whoever makes it. Rules match in order.
func AuditPolicy(users []string) string {
	quoted := make([]string, len(users))
	for i, u := range users {
		quoted[i] = fmt.Sprintf("%q", u)
	}
	// The default policy's rules follow, in their one place.
	return strings.Replace(localcluster.DefaultAuditPolicy, "rules:\n",
		"rules:\n- level: Metadata\n  users: ["+strings.Join(quoted, ", ")+"]\n", 1)
}

// Requests counts API requests keyed "verb resource[/subresource]".
type Requests map[string]int

// Total is the number of requests.
func (r Requests) Total() int {
	n := 0
	for _, v := range r {
		n += v
	}
	return n
}

// String lists the counts, largest first (ties by key).
func (r Requests) String() string {
	keys := slices.Collect(maps.Keys(r))
	slices.SortFunc(keys, func(a, b string) int {
		if r[a] != r[b] {
			return r[b] - r[a]
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, r[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// AuditSummary is what a stretch of the audit log says about one phase.
type AuditSummary struct {
	// Requests are the requests of the audited users (AuditFilter.Users),
	// in every namespace and cluster-scoped.
	Requests Requests
	// ByUser counts Requests by user, kube-system service accounts
	// shortened to their name: each controller's client has a rate limit of
	// its own, so this shows whose budget a phase spent.
	ByUser Requests
	// SchedulerRequests are AuditFilter.Scheduler's, in AuditFilter.Namespace.
	SchedulerRequests Requests
	// SchedulingWrites are the writes to Workloads and PodGroups in
	// AuditFilter.Namespace, keyed as framework.AuditedWrites keys them
	// ("<user>: <verb> <resource>", kube-system service accounts shortened
	// to their name), so they compare with the suites' expected lists.
	SchedulingWrites framework.WriteCounts
	// LastPodCreate is when the controllers' last successful pod create in
	// AuditFilter.Namespace completed; zero when there was none.
	LastPodCreate time.Time
	// LastPodGroupWrite is when the controllers' last successful create,
	// update or patch of a PodGroup's spec (not its status) in
	// AuditFilter.Namespace completed: the PodGroups are final (their
	// minCount included) from then on. Zero when there was none.
	LastPodGroupWrite time.Time
}

// AuditFilter selects the events a summary counts.
type AuditFilter struct {
	Users     []string
	Scheduler string
	Namespace string
}

// ParseAudit reads audit events (JSON lines, as kube-apiserver's log
// backend writes them). A request is counted once: at ResponseComplete,
// except a watch, which is counted when it starts (ResponseStarted), since
// it may outlive the phase. Lines that are not events are skipped (the log
// may be read while the apiserver appends to it: the last line can be
// partial).
func ParseAudit(r io.Reader, f AuditFilter) (AuditSummary, error) {
	out := AuditSummary{Requests: Requests{}, ByUser: Requests{}, SchedulerRequests: Requests{}, SchedulingWrites: framework.WriteCounts{}}
	err := framework.ScanAudit(r, func(ev framework.AuditEvent) {
		once := ev.Stage == "ResponseComplete" && ev.Verb != "watch" || ev.Stage == "ResponseStarted" && ev.Verb == "watch"
		if !once {
			return
		}
		res := ev.Resource()
		if slices.Contains(f.Users, ev.User.Username) {
			out.Requests[ev.Verb+" "+res]++
			out.ByUser[strings.TrimPrefix(ev.User.Username, "system:serviceaccount:kube-system:")]++
		}
		if f.Scheduler != "" && ev.User.Username == f.Scheduler && ev.ObjectRef.Namespace == f.Namespace {
			out.SchedulerRequests[ev.Verb+" "+res]++
		}
		scheduling := ev.ObjectRef.APIGroup == "scheduling.k8s.io" && (res == "workloads" || res == "podgroups")
		write := ev.Verb == "create" || ev.Verb == "update" || ev.Verb == "patch" || ev.Verb == "delete"
		if scheduling && write && ev.ObjectRef.Namespace == f.Namespace {
			out.SchedulingWrites[ev.WriteKey()]++
		}
		// The write history of what the implementation owns: the
		// controllers' pods and PodGroups, done when the last one completed.
		ok := ev.ResponseStatus.Code >= 200 && ev.ResponseStatus.Code < 300
		if ok && ev.ObjectRef.Namespace == f.Namespace && slices.Contains(f.Users, ev.User.Username) {
			switch {
			case ev.Verb == "create" && ev.ObjectRef.APIGroup == "" && res == "pods":
				out.LastPodCreate = later(out.LastPodCreate, ev.StageTimestamp)
			case ev.Verb != "delete" && write && ev.ObjectRef.APIGroup == "scheduling.k8s.io" && res == "podgroups":
				out.LastPodGroupWrite = later(out.LastPodGroupWrite, ev.StageTimestamp)
			}
		}
	})
	return out, err
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// ReadAuditFrom parses the log at path from byte offset on.
func ReadAuditFrom(path string, offset int64, f AuditFilter) (AuditSummary, error) {
	fh, err := os.Open(path)
	if err != nil {
		return AuditSummary{}, err
	}
	defer fh.Close()
	if _, err := fh.Seek(offset, io.SeekStart); err != nil {
		return AuditSummary{}, err
	}
	return ParseAudit(fh, f)
}

// FileSize is the current size of path (0 if it does not exist yet).
func FileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}
