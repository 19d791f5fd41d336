package framework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

func TestPriorityClassFixturesRankLowBelowHigh(t *testing.T) {
	pcs, err := PriorityClassFixtures()
	if err != nil {
		t.Fatal(err)
	}
	low, high := pcs[PriorityLow], pcs[PriorityHigh]
	if low.Value >= high.Value {
		t.Errorf("%s=%d must rank below %s=%d", PriorityLow, low.Value, PriorityHigh, high.Value)
	}
	// Above 1000000000 are system classes, which user objects may not create.
	if high.Value > 1000000000 || low.GlobalDefault || high.GlobalDefault {
		t.Errorf("the fixture classes must be ordinary user classes: %+v %+v", low, high)
	}
}

func victimPod(name, uid, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func preempted(p *corev1.Pod, reason string) *corev1.Pod {
	p = p.DeepCopy()
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason})
	return p
}

func terminating(p *corev1.Pod) *corev1.Pod {
	p = p.DeepCopy()
	p.DeletionTimestamp = &metav1.Time{}
	return p
}

// The watch counts an original pod once, by UID, whatever number of events
// it sees, ignores other pods (a replacement under the same name), and flags
// a pod that went without the scheduler's DisruptionTarget condition.
func TestPreemptionWatchOutcome(t *testing.T) {
	a, b, c := victimPod("v-0", "a", "n0"), victimPod("v-1", "b", "n1"), victimPod("v-2", "c", "n2")
	w := &PreemptionWatch{original: map[types.UID]corev1.Pod{"a": *a, "b": *b, "c": *c}, disruption: map[types.UID]string{}}
	for _, ev := range []watch.Event{
		{Type: watch.Modified, Object: preempted(a, corev1.PodReasonPreemptionByScheduler)},
		{Type: watch.Modified, Object: terminating(preempted(a, corev1.PodReasonPreemptionByScheduler))},
		{Type: watch.Deleted, Object: terminating(preempted(a, corev1.PodReasonPreemptionByScheduler))},
		{Type: watch.Added, Object: victimPod("v-0", "a2", "")}, // the replacement
		{Type: watch.Deleted, Object: terminating(victimPod("v-0", "a2", ""))},
		{Type: watch.Deleted, Object: b},
	} {
		w.observe(ev)
	}
	o := w.Outcome()
	if len(o.Evicted) != 2 || o.Evicted[0] != "v-0@n0" || o.Evicted[1] != "v-1@n1" {
		t.Errorf("evicted %v, want v-0@n0 and v-1@n1", o.Evicted)
	}
	if len(o.NotMarked) != 1 || o.NotMarked[0] != "v-1" {
		t.Errorf("not marked %v, want v-1 (deleted without DisruptionTarget)", o.NotMarked)
	}
	if len(o.Survivors) != 1 || o.Survivors[0] != "v-2@n2" {
		t.Errorf("survivors %v, want v-2@n2", o.Survivors)
	}
	if o.Originals != 3 {
		t.Errorf("originals %d, want 3", o.Originals)
	}
}
