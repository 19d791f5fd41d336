package crashpoint

import (
	"strings"
	"testing"
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
