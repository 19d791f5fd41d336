package framework

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"strings"

	"github.com/onsi/ginkgo/v2"
)

// AuditedWrites reads the local cluster's audit log of scheduling.k8s.io
// writes from where it was when the reader was made, so a spec can attribute
// every Workload and PodGroup write to the component that made it.
type AuditedWrites struct {
	path      string
	namespace string
	offset    int64
}

// NewAuditedWrites starts reading at the end of the audit log, counting only
// writes in namespace (other specs' cleanups write elsewhere at any time); it
// skips the spec when the suite does not own the cluster (no audit log).
func NewAuditedWrites(namespace string) *AuditedWrites {
	c := RequireLocalCluster()
	st, err := os.Stat(c.AuditLogPath())
	if err != nil {
		ginkgo.Fail("the local cluster has no audit log: " + err.Error())
	}
	return &AuditedWrites{path: c.AuditLogPath(), namespace: namespace, offset: st.Size()}
}

// Since returns the writes logged since the reader was made (or last reset),
// keyed "<user>: <verb> <resource>[/<subresource>]"; kube-system service
// accounts are shortened to their name.
func (a *AuditedWrites) Since() WriteCounts {
	f, err := os.Open(a.path)
	if err != nil {
		ginkgo.Fail("opening the audit log: " + err.Error())
	}
	defer f.Close()
	if _, err := f.Seek(a.offset, io.SeekStart); err != nil {
		ginkgo.Fail(err.Error())
	}
	out := WriteCounts{}
	if err := ScanAudit(f, func(ev AuditEvent) {
		if ev.ObjectRef.Namespace == a.namespace {
			out[ev.WriteKey()]++
		}
	}); err != nil {
		ginkgo.Fail("reading the audit log: " + err.Error())
	}
	return out
}

// Reset moves the reader to the end of the log.
func (a *AuditedWrites) Reset() {
	if st, err := os.Stat(a.path); err == nil {
		a.offset = st.Size()
	}
}

// AuditEvent is what the harness reads of a kube-apiserver audit event
// (audit.k8s.io/v1 Event, as the log backend writes it, one per line).
type AuditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		APIGroup    string `json:"apiGroup"`
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
	} `json:"objectRef"`
}

// Resource is "resource" or "resource/subresource".
func (e AuditEvent) Resource() string {
	if e.ObjectRef.Subresource != "" {
		return e.ObjectRef.Resource + "/" + e.ObjectRef.Subresource
	}
	return e.ObjectRef.Resource
}

// WriteKey is the event's key in WriteCounts: "<user>: <verb> <resource>",
// with kube-system service accounts shortened to their name.
func (e AuditEvent) WriteKey() string {
	return strings.TrimPrefix(e.User.Username, "system:serviceaccount:kube-system:") + ": " + e.Verb + " " + e.Resource()
}

// ScanAudit calls fn with each event of r. Lines that are not events are
// skipped: the log is read while the apiserver appends, so the last line may
// be partial.
func ScanAudit(r io.Reader, fn func(AuditEvent)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev AuditEvent
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			fn(ev)
		}
	}
	return sc.Err()
}
