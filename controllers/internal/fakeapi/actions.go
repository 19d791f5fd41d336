package fakeapi

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

// Writes lists the mutating actions ("create podgroups", ...) among actions,
// ignoring reads, list/watch of the informers, discovery and events.
func Writes(actions []clienttesting.Action) []string {
	var out []string
	for _, act := range actions {
		switch act.GetVerb() {
		case "create", "update", "patch", "delete", "deletecollection":
		default:
			continue
		}
		if act.GetResource().Resource == "events" {
			continue
		}
		out = append(out, act.GetVerb()+" "+act.GetResource().Resource)
	}
	return out
}

// Writes lists the mutating actions recorded so far.
func (a *API) Writes() []string { return Writes(a.Client.Actions()) }

// SchedulingWrites are the writes on Workloads and PodGroups.
func (a *API) SchedulingWrites() []string {
	var out []string
	for _, w := range a.Writes() {
		if strings.HasSuffix(w, " workloads") || strings.HasSuffix(w, " podgroups") {
			out = append(out, w)
		}
	}
	return out
}

// SchedulingActions lists every action of any verb on scheduling.k8s.io.
func (a *API) SchedulingActions() []string {
	return a.schedulingActions(func(string) bool { return true })
}

// SchedulingCalls lists every scheduling.k8s.io action except the
// informers' list and watch.
func (a *API) SchedulingCalls() []string {
	return a.schedulingActions(func(verb string) bool { return verb != "list" && verb != "watch" })
}

func (a *API) schedulingActions(keep func(verb string) bool) []string {
	var out []string
	for _, act := range a.Client.Actions() {
		if act.GetResource().Group == schedulingGroup && keep(act.GetVerb()) {
			out = append(out, act.GetVerb()+" "+act.GetResource().Resource)
		}
	}
	return out
}

// UpdatedObjects returns the objects of the update actions on resource.
func (a *API) UpdatedObjects(resource string) []runtime.Object {
	var out []runtime.Object
	for _, act := range a.Client.Actions() {
		if ua, ok := act.(clienttesting.UpdateAction); ok && act.GetVerb() == "update" && act.GetResource().Resource == resource {
			out = append(out, ua.GetObject())
		}
	}
	return out
}

// Count counts the actions with verb on resource (reads included).
func (a *API) Count(verb, resource string) int {
	n := 0
	for _, act := range a.Client.Actions() {
		if act.GetVerb() == verb && act.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

// Events drains the recorded events ("Warning Reason message").
func (a *API) Events() []string {
	var out []string
	for {
		select {
		case ev := <-a.Recorder.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// HasEvent reports whether one of events starts with prefix.
func HasEvent(events []string, prefix string) bool {
	for _, ev := range events {
		if strings.HasPrefix(ev, prefix) {
			return true
		}
	}
	return false
}
