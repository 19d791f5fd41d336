package upgrade

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/watch"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
)

// The list covers, for each kind, the sequences issue 23 names, once each,
// under names that cannot collide.
func TestCrashSequencesCoverEverySequenceOnce(t *testing.T) {
	want := map[string][]string{
		apps.KindDeployment:  {"create at 2", "scale 2 to 3", "scale 3 to 2", "scale 2 to zero", "Recreate rollout", "RollingUpdate rollout", "delete"},
		apps.KindStatefulSet: {"create at 2", "scale 2 to 3", "scale 3 to 2", "scale 2 to zero", "RollingUpdate rollout", "delete"},
	}
	got := map[string][]string{}
	slugs := map[string]bool{}
	for _, q := range crashSequences {
		_, what, _ := strings.Cut(q.String(), ": ")
		got[q.Kind] = append(got[q.Kind], what)
		if slugs[q.slug()] {
			t.Errorf("two sequences share the app name prefix %s", q.slug())
		}
		slugs[q.slug()] = true
	}
	for kind, w := range want {
		if !slices.Equal(got[kind], w) {
			t.Errorf("%s sequences = %q, want %q", kind, got[kind], w)
		}
	}
}

func TestObservedWritesCountWhatAControllerWrites(t *testing.T) {
	changes := []framework.Change{
		{Resource: "workloads", Type: watch.Added, UID: "w", MinCount: 2},
		{Resource: "replicasets", Type: watch.Added, UID: "rs", Replicas: 2},
		{Resource: "podgroups", Type: watch.Added, UID: "pg", MinCount: 2},
		{Resource: "pods", Type: watch.Added, UID: "p1"},
		{Resource: "pods", Type: watch.Modified, UID: "p1", Ready: true},            // the kubelet's
		{Resource: "replicasets", Type: watch.Modified, UID: "rs", Replicas: 2},     // status only
		{Resource: "workloads", Type: watch.Modified, UID: "w", MinCount: 3},        // counted
		{Resource: "replicasets", Type: watch.Modified, UID: "rs", Replicas: 0},     // counted
		{Resource: "podgroups", Type: watch.Modified, UID: "pg", Terminating: true}, // counted
		{Resource: "podgroups", Type: watch.Deleted, UID: "pg", Terminating: true},  // the same deletion
	}
	got := observedWrites(nil, changes)
	var uids []string
	for _, c := range got {
		uids = append(uids, c.UID)
	}
	if want := []string{"w", "rs", "pg", "p1", "w", "rs", "pg"}; !slices.Equal(uids, want) {
		t.Errorf("observed writes of %v = %v, want %v", changes, uids, want)
	}
}

// An object that existed before the watch: its first change is judged
// against what it was, so a minCount change counts and a status write not.
func TestObservedWritesJudgeAnObjectFromBeforeTheWatch(t *testing.T) {
	before := []framework.Change{
		{Resource: "workloads", UID: "w", MinCount: 2},
		{Resource: "replicasets", UID: "rs", Replicas: 2},
	}
	changes := []framework.Change{
		{Resource: "replicasets", Type: watch.Modified, UID: "rs", Replicas: 2}, // status only
		{Resource: "workloads", Type: watch.Modified, UID: "w", MinCount: 3},    // counted
	}
	if got := observedWrites(before, changes); len(got) != 1 || got[0].UID != "w" {
		t.Errorf("observed writes = %v, want the Workload's minCount change only", got)
	}
}
