package apps

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestWarningMatches(t *testing.T) {
	ambiguous := Warning{Why: "two Workloads name it", Names: []string{"ambiguous-first", "ambiguous-second"}}
	named := Warning{Why: "a reason the KEP names", Reason: "WorkloadCreationFailed"}
	warning := func(reason, msg string) corev1.Event {
		return corev1.Event{Type: corev1.EventTypeWarning, Reason: reason, Message: msg}
	}
	for _, tc := range []struct {
		name  string
		want  Warning
		event corev1.Event
		match bool
	}{
		{"the warning asked for", ambiguous, warning("AmbiguousWorkload", "2 Workloads name this StatefulSet (ambiguous-first, ambiguous-second)"), true},
		{"another reason, naming the Workload", ambiguous, warning("SomeVendorReason", `Workload "ambiguous-second" is one of two`), true},
		// The finding: an unrelated FailedCreate of a pod satisfied S-U14.
		{"an unrelated FailedCreate", ambiguous, warning("FailedCreate", "create Pod ambiguous-0 in StatefulSet ambiguous failed error: pods is forbidden"), false},
		{"FailedCreate that happens to name the Workload", ambiguous, warning("FailedCreate", "create Pod failed: Workload ambiguous-first"), false},
		{"a warning naming no object in question", ambiguous, warning("AmbiguousWorkload", "2 Workloads name this StatefulSet"), false},
		{"a name only as part of another", ambiguous, warning("AmbiguousWorkload", "Workload ambiguous-first-copy"), false},
		{"a Normal event", ambiguous, corev1.Event{Type: corev1.EventTypeNormal, Reason: "AmbiguousWorkload", Message: "ambiguous-first"}, false},
		{"no reason", ambiguous, warning("", "ambiguous-first"), false},
		{"the reason the KEP names", named, warning("WorkloadCreationFailed", "anything"), true},
		{"another reason where the KEP names one", named, warning("FailedCreate", "anything"), false},
	} {
		if got := tc.want.Matches(tc.event); got != tc.match {
			t.Errorf("%s: %s matches %q %q = %t; want %t", tc.name, tc.want, tc.event.Reason, tc.event.Message, got, tc.match)
		}
	}
}
