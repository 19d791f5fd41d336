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
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Verb string `json:"verb"`
			User struct {
				Username string `json:"username"`
			} `json:"user"`
			ObjectRef struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
				Namespace   string `json:"namespace"`
			} `json:"objectRef"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.ObjectRef.Namespace != a.namespace {
			continue
		}
		user := strings.TrimPrefix(ev.User.Username, "system:serviceaccount:kube-system:")
		res := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			res += "/" + ev.ObjectRef.Subresource
		}
		out[user+": "+ev.Verb+" "+res]++
	}
	return out
}

// Reset moves the reader to the end of the log.
func (a *AuditedWrites) Reset() {
	if st, err := os.Stat(a.path); err == nil {
		a.offset = st.Size()
	}
}
