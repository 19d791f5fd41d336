package framework

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodsLeavingNodes(t *testing.T) {
	now := metav1.Now()
	pod := func(ns, name, node string, phase corev1.PodPhase, deleting bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
		if deleting {
			p.DeletionTimestamp = &now
		}
		return p
	}
	namespaces := []corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "live"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "gone", DeletionTimestamp: &now}},
		{ObjectMeta: metav1.ObjectMeta{Name: "phase"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
	}
	pods := []corev1.Pod{
		pod("live", "running", "n1", corev1.PodRunning, false),           // holds capacity, but for a reason: not leaving
		pod("live", "deleting", "n2", corev1.PodRunning, true),           // leaving
		pod("live", "pending-deleting", "", corev1.PodPending, true),     // on no node: takes no capacity
		pod("gone", "in-terminating-ns", "n3", corev1.PodRunning, false), // leaving with its namespace
		pod("phase", "by-phase", "n4", corev1.PodRunning, false),         // namespace terminating by phase only
		pod("gone", "done", "n5", corev1.PodSucceeded, false),            // finished: the scheduler no longer counts it
	}
	got := podsLeavingNodes(pods, namespaces)
	want := []string{"gone/in-terminating-ns@n3", "live/deleting@n2", "phase/by-phase@n4"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("podsLeavingNodes = %v, want %v", got, want)
	}
}
