package framework

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
)

// AuditLogPath is the audit log of the cluster under test: the local
// cluster's, else --audit-log's on an existing cluster; "" when there is none.
// Both are written with pkg/localcluster's DefaultAuditPolicy (every
// Workload and PodGroup write, at Metadata level: user and User-Agent).
func AuditLogPath() string {
	if lc := LocalCluster; lc != nil {
		return lc.AuditLogPath()
	}
	return TestContext.AuditLog
}

// RequireAuditLog returns AuditLogPath, skipping the spec, with the reason,
// when there is none.
func RequireAuditLog() string {
	ginkgo.GinkgoHelper()
	path := AuditLogPath()
	if path == "" {
		ginkgo.Skip("attributes writes to their writer from kube-apiserver's audit log: on an existing cluster give the suite --audit-log " +
			"(env AUDIT_LOG; make e2e-kind mounts kind's), a file readable here written with the harness's audit policy")
	}
	return path
}

// AuditedWrites reads the audit log of scheduling.k8s.io writes from where
// it was when the reader was made, so a spec can attribute every Workload
// and PodGroup write to the component that made it.
type AuditedWrites struct {
	path      string
	namespace string
	offset    int64
}

// NewAuditedWrites starts reading at the end of the audit log, counting only
// writes in namespace (other specs' cleanups write elsewhere at any time); it
// skips the spec when there is no audit log (RequireAuditLog).
func NewAuditedWrites(namespace string) *AuditedWrites {
	ginkgo.GinkgoHelper()
	path := RequireAuditLog()
	st, err := os.Stat(path)
	if err != nil {
		ginkgo.Fail("reading the audit log: " + err.Error())
	}
	return &AuditedWrites{path: path, namespace: namespace, offset: st.Size()}
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
	// ResponseStatus is set from ResponseStarted on (Metadata level too).
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	// StageTimestamp is when the event's stage was reached: for
	// ResponseComplete, when the write was done.
	StageTimestamp time.Time `json:"stageTimestamp"`
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
