package benchscale

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

func event(stage, verb, user, group, resource, sub, ns string) string {
	return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"` + stage + `","verb":"` + verb +
		`","user":{"username":"` + user + `"},"objectRef":{"resource":"` + resource + `","subresource":"` + sub +
		`","namespace":"` + ns + `","apiGroup":"` + group + `"}}`
}

const (
	rsc = "system:serviceaccount:kube-system:replicaset-controller"
	dc  = "system:serviceaccount:kube-system:deployment-controller"
	gc  = "system:serviceaccount:kube-system:generic-garbage-collector"
)

func TestParseAudit(t *testing.T) {
	lines := []string{
		event("ResponseComplete", "create", rsc, "", "pods", "", "bench"),
		event("ResponseComplete", "create", rsc, "", "pods", "", "bench"),
		event("ResponseComplete", "update", rsc, "apps", "replicasets", "status", "bench"),
		// A watch counts once, when it starts; its end is not a second request.
		event("ResponseStarted", "watch", "was-controller-manager", "", "pods", "", ""),
		event("ResponseComplete", "watch", "was-controller-manager", "", "pods", "", ""),
		// A plain request's ResponseStarted (none in practice) is not counted twice.
		event("ResponseStarted", "list", "was-controller-manager", "apps", "deployments", "", ""),
		event("ResponseComplete", "list", "was-controller-manager", "apps", "deployments", "", ""),
		// Scheduling writes: the controllers' in the namespace, another user's, another namespace's.
		event("ResponseComplete", "create", dc, "scheduling.k8s.io", "workloads", "", "bench"),
		event("ResponseComplete", "create", rsc, "scheduling.k8s.io", "podgroups", "", "bench"),
		event("ResponseComplete", "delete", gc, "scheduling.k8s.io", "podgroups", "", "bench"),
		event("ResponseComplete", "create", dc, "scheduling.k8s.io", "workloads", "", "other"),
		// Reads of Workloads are requests, not writes.
		event("ResponseComplete", "get", dc, "scheduling.k8s.io", "workloads", "", "bench"),
		// Not one of the users: no request counted.
		event("ResponseComplete", "create", "system:kube-scheduler", "", "pods", "binding", "bench"),
		"not json",
		`{"stage":"ResponseComplete","verb":"cre`, // a partial last line
	}
	lines = append(lines,
		event("ResponseComplete", "create", SchedulerUser, "", "pods", "binding", "other"),
		event("ResponseComplete", "patch", SchedulerUser, "", "pods", "status", "bench"))
	got, err := ParseAudit(strings.NewReader(strings.Join(lines, "\n")), AuditFilter{Users: ControllerUsers, Scheduler: SchedulerUser, Namespace: "bench"})
	if err != nil {
		t.Fatal(err)
	}
	wantReq := "create pods=2, create workloads=2, create podgroups=1, get workloads=1, list deployments=1, update replicasets/status=1, watch pods=1"
	if s := got.Requests.String(); s != wantReq {
		t.Errorf("requests:\n got %s\nwant %s", s, wantReq)
	}
	if got.Requests.Total() != 9 {
		t.Errorf("total %d, want 9", got.Requests.Total())
	}
	if s := got.ByUser.String(); s != "replicaset-controller=4, deployment-controller=3, was-controller-manager=2" {
		t.Errorf("by user: %s", s)
	}
	// The scheduler's, in the namespace only, and never among the controllers'.
	if s := got.SchedulerRequests.String(); s != "create pods/binding=1, patch pods/status=1" {
		t.Errorf("scheduler requests: %s, want create pods/binding=1, patch pods/status=1", s)
	}
	wantWrites := "deployment-controller: create workloads=1, generic-garbage-collector: delete podgroups=1, replicaset-controller: create podgroups=1"
	if s := got.SchedulingWrites.String(); s != wantWrites {
		t.Errorf("writes:\n got %s\nwant %s", s, wantWrites)
	}
}

func TestReadAuditFromOffset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	before := event("ResponseComplete", "create", rsc, "", "pods", "", "bench") + "\n"
	after := event("ResponseComplete", "delete", rsc, "", "pods", "", "bench") + "\n"
	if err := os.WriteFile(path, []byte(before+after), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadAuditFrom(path, int64(len(before)), AuditFilter{Users: ControllerUsers})
	if err != nil {
		t.Fatal(err)
	}
	if s := got.Requests.String(); s != "delete pods=1" {
		t.Errorf("from the offset: %s, want delete pods=1", s)
	}
	if FileSize(path) != int64(len(before)+len(after)) || FileSize(filepath.Join(t.TempDir(), "none")) != 0 {
		t.Error("FileSize")
	}
}

// TestAuditPolicyIsAPolicy: the policy is YAML the apiserver accepts in
// shape (users listed in the first rule, the catch-all None last).
func TestAuditPolicyIsAPolicy(t *testing.T) {
	var p struct {
		Kind  string `json:"kind"`
		Rules []struct {
			Level string   `json:"level"`
			Users []string `json:"users"`
		} `json:"rules"`
	}
	if err := yaml.Unmarshal([]byte(AuditPolicy(ControllerUsers)), &p); err != nil {
		t.Fatal(err)
	}
	if p.Kind != "Policy" || len(p.Rules) != 3 || p.Rules[2].Level != "None" {
		t.Fatalf("policy shape: %+v", p)
	}
	if strings.Join(p.Rules[0].Users, ",") != strings.Join(ControllerUsers, ",") {
		t.Errorf("first rule's users %v, want %v", p.Rules[0].Users, ControllerUsers)
	}
}

// timed is event with the response code and the time its stage was reached.
func timed(verb, user, group, resource, sub, ns string, code int, at time.Time) string {
	e := event("ResponseComplete", verb, user, group, resource, sub, ns)
	return strings.TrimSuffix(e, "}") + fmt.Sprintf(`,"responseStatus":{"code":%d},"stageTimestamp":%q}`, code, at.Format(time.RFC3339Nano))
}

// TestParseAuditWriteHistory: the implementation is done when the
// controllers' last successful pod create and PodGroup spec write in the
// namespace completed; status writes, deletes, failures, other users and
// other namespaces do not move it.
func TestParseAuditWriteHistory(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 22, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ssc := "system:serviceaccount:kube-system:statefulset-controller"
	lines := []string{
		timed("create", rsc, "", "pods", "", "bench", 201, at(100)),
		timed("create", ssc, "", "pods", "", "bench", 201, at(900)),
		timed("create", rsc, "scheduling.k8s.io", "podgroups", "", "bench", 201, at(50)),
		timed("update", rsc, "scheduling.k8s.io", "podgroups", "", "bench", 200, at(700)),
		// Not the implementation's part, or not done:
		timed("create", rsc, "", "pods", "", "bench", 409, at(5000)),
		timed("create", rsc, "", "pods", "", "other", 201, at(5000)),
		timed("create", SchedulerUser, "", "pods", "binding", "bench", 201, at(5000)),
		timed("update", rsc, "scheduling.k8s.io", "podgroups", "status", "bench", 200, at(5000)),
		timed("delete", rsc, "scheduling.k8s.io", "podgroups", "", "bench", 200, at(5000)),
		timed("patch", SchedulerUser, "scheduling.k8s.io", "podgroups", "", "bench", 200, at(5000)),
	}
	got, err := ParseAudit(strings.NewReader(strings.Join(lines, "\n")), AuditFilter{Users: ControllerUsers, Scheduler: SchedulerUser, Namespace: "bench"})
	if err != nil {
		t.Fatal(err)
	}
	if !got.LastPodCreate.Equal(at(900)) || !got.LastPodGroupWrite.Equal(at(700)) {
		t.Errorf("last pod create %s, last PodGroup write %s; want %s and %s", got.LastPodCreate, got.LastPodGroupWrite, at(900), at(700))
	}
	none, err := ParseAudit(strings.NewReader(lines[0]), AuditFilter{Users: ControllerUsers, Namespace: "bench"})
	if err != nil || !none.LastPodGroupWrite.IsZero() {
		t.Errorf("no PodGroup write: %s, %v; want zero", none.LastPodGroupWrite, err)
	}
}
