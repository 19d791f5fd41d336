package crashpoint

import (
	"net/http"
	"strings"
	"testing"

	"github.com/workload-aware/apps-harness/api/crashpoint"
)

// exits records the codes Reached passed to exit instead of ending the test.
func exits(t *testing.T) *[]int {
	t.Helper()
	var got []int
	old := exit
	exit = func(code int) { got = append(got, code) }
	t.Cleanup(func() { exit = old; _ = Arm("") })
	return &got
}

func TestArmRejectsUnknownPointsAndNamesTheKnownOnes(t *testing.T) {
	exits(t)
	err := Arm("deployment/after-lunch")
	if err == nil {
		t.Fatal("Arm accepted an unknown point")
	}
	for _, p := range Known {
		if !strings.Contains(err.Error(), string(p)) {
			t.Errorf("error %q does not list known point %s", err, p)
		}
	}
	for _, p := range Known {
		if err := Arm(string(p)); err != nil {
			t.Errorf("Arm(%s): %v", p, err)
		}
	}
}

func TestReachedExitsOnlyAtTheArmedPoint(t *testing.T) {
	got := exits(t)
	Reached(DeploymentAfterWorkloadCreate, "ns") // nothing armed
	if err := Arm(string(StatefulSetAfterWorkloadCreate)); err != nil {
		t.Fatal(err)
	}
	for _, p := range Known {
		if p != StatefulSetAfterWorkloadCreate {
			Reached(p, "ns")
		}
	}
	if len(*got) != 0 {
		t.Fatalf("exited %v before the armed point was reached", *got)
	}
	Reached(StatefulSetAfterWorkloadCreate, "ns")
	if len(*got) != 1 || (*got)[0] != ExitCode {
		t.Fatalf("exits = %v, want one with status %d", *got, ExitCode)
	}
}

func TestANamespacedPointFiresOnlyInItsNamespace(t *testing.T) {
	got := exits(t)
	if err := Arm(string(DeploymentAfterPodGroupCreate) + "@mine"); err != nil {
		t.Fatal(err)
	}
	Reached(DeploymentAfterPodGroupCreate, "other")
	if len(*got) != 0 {
		t.Fatalf("fired in another namespace: %v", *got)
	}
	Reached(DeploymentAfterPodGroupCreate, "mine")
	if len(*got) != 1 {
		t.Fatalf("exits = %v, want one", *got)
	}
}

func TestArmEmptyDisarms(t *testing.T) {
	got := exits(t)
	_ = Arm(string(DeploymentBetweenMinCountUpdates))
	if err := Arm(""); err != nil {
		t.Fatal(err)
	}
	Reached(DeploymentBetweenMinCountUpdates, "ns")
	if len(*got) != 0 {
		t.Fatalf("a disarmed point fired: %v", *got)
	}
}

// In a container the kubelet restarts with the same flags, the crash is
// remembered (deploy/ mounts an emptyDir at MarkerDir), so the restarted run
// stays down; another point, or no MarkerDir, remembers nothing.
func TestReachedIsRememberedAcrossRestarts(t *testing.T) {
	got := exits(t)
	old := MarkerDir
	t.Cleanup(func() { MarkerDir = old })
	MarkerDir = t.TempDir()
	arg := string(DeploymentAfterWorkloadCreate) + "@ns"
	if ReachedBefore(arg) {
		t.Fatal("ReachedBefore before any crash")
	}
	if err := Arm(arg); err != nil {
		t.Fatal(err)
	}
	Reached(DeploymentAfterWorkloadCreate, "ns")
	if len(*got) != 1 {
		t.Fatalf("exits = %v, want one", *got)
	}
	if !ReachedBefore(arg) {
		t.Fatal("the restarted container does not know it crashed at its armed point")
	}
	if ReachedBefore(string(DeploymentAfterPodGroupCreate)+"@ns") || ReachedBefore("") {
		t.Fatal("ReachedBefore for another point, or none")
	}
	MarkerDir = t.TempDir() + "/missing"
	if ReachedBefore(arg) {
		t.Fatal("ReachedBefore without a marker directory")
	}
}

func TestCountedWrites(t *testing.T) {
	for _, c := range []struct {
		method, path string
		ns, what     string
	}{
		{"POST", "/api/v1/namespaces/a/pods", "a", "create pods"},
		{"DELETE", "/api/v1/namespaces/a/pods/web-1", "a", "delete pods/web-1"},
		{"PATCH", "/apis/apps/v1/namespaces/b/replicasets/web-5d8", "b", "patch replicasets/web-5d8"},
		{"PUT", "/apis/scheduling.k8s.io/v1beta1/namespaces/b/podgroups/web-5d8", "b", "update podgroups/web-5d8"},
		{"PUT", "/apis/apps/v1/namespaces/b/deployments/web/scale", "b", "update deployments/web/scale"},
		{"GET", "/api/v1/namespaces/a/pods", "", ""},
		{"PUT", "/apis/apps/v1/namespaces/b/replicasets/web-5d8/status", "", ""},
		{"POST", "/api/v1/namespaces/a/events", "", ""},
		{"PATCH", "/apis/events.k8s.io/v1/namespaces/a/events/x", "", ""},
		{"DELETE", "/api/v1/namespaces/a", "", ""},
		{"POST", "/apis/authentication.k8s.io/v1/tokenreviews", "", ""},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/was", "kube-system", "update leases/was"},
	} {
		ns, what, ok := countedWrite(c.method, c.path)
		if ok != (c.what != "") || ns != c.ns || what != c.what {
			t.Errorf("countedWrite(%s %s) = %q, %q, %t; want %q, %q", c.method, c.path, ns, what, ok, c.ns, c.what)
		}
	}
}

// answer is a transport that answers every request with its status.
type answer int

func (a answer) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: int(a), Body: http.NoBody, Request: req}, nil
}

func TestAWritePointExitsAfterTheNthCountedWriteInItsNamespace(t *testing.T) {
	got := exits(t)
	if err := Arm(string(crashpoint.AfterWrite(3)) + "@mine"); err != nil {
		t.Fatal(err)
	}
	ok, conflict := WrapTransport(answer(201)), WrapTransport(answer(409))
	send := func(rt http.RoundTripper, method, path string) {
		t.Helper()
		req, _ := http.NewRequest(method, "https://apiserver"+path, nil)
		if _, err := rt.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	}
	send(ok, "POST", "/apis/scheduling.k8s.io/v1beta1/namespaces/mine/workloads") // 1
	send(ok, "POST", "/apis/apps/v1/namespaces/other/replicasets")                // another namespace
	send(conflict, "PUT", "/apis/apps/v1/namespaces/mine/replicasets/web")        // failed: not a write
	send(ok, "PUT", "/apis/apps/v1/namespaces/mine/replicasets/web/status")       // status
	send(ok, "POST", "/apis/apps/v1/namespaces/mine/replicasets")                 // 2
	if len(*got) != 0 {
		t.Fatalf("exited %v after two counted writes", *got)
	}
	send(ok, "POST", "/apis/scheduling.k8s.io/v1beta1/namespaces/mine/podgroups") // 3
	if len(*got) != 1 || (*got)[0] != ExitCode {
		t.Fatalf("exits = %v, want one with status %d after the third write", *got, ExitCode)
	}
	send(ok, "POST", "/api/v1/namespaces/mine/pods")
	if len(*got) != 1 {
		t.Fatalf("exits = %v: a write after the armed one exited again", *got)
	}
}

func TestANamedPointCountsNoWrite(t *testing.T) {
	got := exits(t)
	if err := Arm(string(DeploymentAfterWorkloadCreate)); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", "https://apiserver/api/v1/namespaces/a/pods", nil)
	for range 5 {
		_, _ = WrapTransport(answer(201)).RoundTrip(req)
	}
	if len(*got) != 0 {
		t.Fatalf("a named point exited on writes: %v", *got)
	}
}
