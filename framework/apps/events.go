package apps

import (
	"context"

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

// WaitForWarning waits for a Warning event about a that is not in before (or
// was repeated since: its count grew), and returns it. The KEPs name no
// reason for most of the events they ask for, so any Warning counts; why says
// what it is expected for.
func WaitForWarning(ctx context.Context, f *framework.Framework, a App, why string, before []corev1.Event) corev1.Event {
	seen := map[string]int32{}
	for _, e := range before {
		seen[e.Name] = e.Count
	}
	var found corev1.Event
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) ([]string, error) {
		events, err := Events(ctx, f, a)
		var fresh []string
		for _, e := range events {
			if count, ok := seen[e.Name]; e.Type == corev1.EventTypeWarning && (!ok || e.Count > count) {
				found = e
				fresh = append(fresh, e.Reason+": "+e.Message)
			}
		}
		return fresh, err
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).ShouldNot(gomega.BeEmpty(),
		"waiting for a Warning event about %s: %s", a, why)
	return found
}
