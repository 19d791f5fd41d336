package apps

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/workload-aware/apps-harness/framework"
)

// Events lists the events about a (its UID too, when known: not a previous
// app of the same name).
func Events(ctx context.Context, f *framework.Framework, a App) ([]corev1.Event, error) {
	sel := fields.Set{"involvedObject.kind": a.Kind, "involvedObject.name": a.Name}
	if a.UID != "" {
		sel["involvedObject.uid"] = string(a.UID)
	}
	list, err := f.ClientSet.CoreV1().Events(f.Namespace).List(ctx, metav1.ListOptions{FieldSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// EventReasons lists the reasons of the events about a.
func EventReasons(ctx context.Context, f *framework.Framework, a App) ([]string, error) {
	events, err := Events(ctx, f, a)
	var out []string
	for _, e := range events {
		out = append(out, e.Reason)
	}
	return out, err
}

// Warning says which Warning event a spec waits for: one about the app (the
// field selector of Events: kind, name and UID) whose reason and message tie
// it to what the KEP asks an event for, so that an unrelated warning (a
// FailedCreate of a pod, say) cannot stand in for it.
type Warning struct {
	// Why says what the event is expected for, for failure messages.
	Why string
	// Reason is required where the KEP names the event's reason. Where it
	// names none (empty), any reason counts but the unrelated ones.
	Reason string
	// Names are the objects the warning is about (a Workload, a PodGroup,
	// an annotation): its message must name at least one of them, as a
	// whole word. Empty: the reason alone decides (only with Reason set).
	Names []string
}

// UnrelatedReasons are the reasons of the events the upstream apps
// controllers (k8s.io/kubernetes 1.37.2, pkg/controller/statefulset,
// deployment, replicaset) and the KEPs' own named events record for other
// purposes: none of them can be a warning that the KEPs ask for without
// naming a reason. The KEP's three (KEP-6277, "Events": WorkloadCreated,
// PodGroupCreated, WorkloadCreationFailed) report a creation and its
// failure; the warnings matched here come where nothing is to be created.
var UnrelatedReasons = []string{
	// statefulset: recordPodEvent and recordClaimEvent (create, update,
	// delete), and the controller's own.
	"SuccessfulCreate", "FailedCreate", "SuccessfulUpdate", "FailedUpdate", "SuccessfulDelete", "FailedDelete",
	"ConflictingController", "UnknownStrategy",
	// deployment and replicaset.
	"ScalingReplicaSet", "SelectingAll", "ReplicaSetCreateError", "DeploymentRollback",
	// KEP-6277, "Events".
	"WorkloadCreated", "PodGroupCreated", "WorkloadCreationFailed",
}

// Matches reports whether e is the warning w describes (e is already known
// to be about the app).
func (w Warning) Matches(e corev1.Event) bool {
	if e.Type != corev1.EventTypeWarning {
		return false
	}
	if w.Reason != "" && e.Reason != w.Reason {
		return false
	}
	if w.Reason == "" && (e.Reason == "" || slices.Contains(UnrelatedReasons, e.Reason)) {
		return false
	}
	if len(w.Names) == 0 {
		return w.Reason != ""
	}
	return slices.ContainsFunc(w.Names, func(n string) bool { return namesWord(e.Message, n) })
}

// namesWord reports whether msg contains name delimited by characters that
// cannot continue an object name (so "first" is not found in "firstly").
func namesWord(msg, name string) bool {
	if name == "" {
		return false
	}
	inName := func(r byte) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
	}
	for from := 0; ; {
		i := strings.Index(msg[from:], name)
		if i < 0 {
			return false
		}
		start, end := from+i, from+i+len(name)
		if (start == 0 || !inName(msg[start-1])) && (end == len(msg) || !inName(msg[end])) {
			return true
		}
		from = start + 1
	}
}

func (w Warning) String() string {
	s := w.Why
	if w.Reason != "" {
		s += ", reason " + w.Reason
	} else {
		s += ", a reason other than " + strings.Join(UnrelatedReasons, "/")
	}
	if len(w.Names) > 0 {
		s += fmt.Sprintf(", naming one of %q", w.Names)
	}
	return s
}

// WaitForWarning waits for a Warning event about a, matching want, that is
// not in before (or was repeated since: its count grew), and returns it.
func WaitForWarning(ctx context.Context, f *framework.Framework, a App, want Warning, before []corev1.Event) corev1.Event {
	seen := map[string]int32{}
	for _, e := range before {
		seen[e.Name] = e.Count
	}
	var found corev1.Event
	var others []string
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) (bool, error) {
		events, err := Events(ctx, f, a)
		others = nil
		for _, e := range events {
			if count, ok := seen[e.Name]; ok && e.Count <= count {
				continue
			}
			if want.Matches(e) {
				found = e
				return true, nil
			}
			others = append(others, e.Type+" "+e.Reason+": "+e.Message)
		}
		return false, err
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.BeTrue(),
		func() string {
			return fmt.Sprintf("waiting for a Warning event about %s: %s; other events: %q", a, want, others)
		})
	return found
}
