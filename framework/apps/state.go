package apps

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
)

// Object is a Workload's or PodGroup's identity and gang minCount (0: basic).
type Object struct {
	Name            string
	UID             types.UID
	ResourceVersion string
	MinCount        int32
	// Terminating: deletionTimestamp set (a PodGroup held by its finalizer).
	Terminating bool
}

func (o Object) String() string {
	s := fmt.Sprintf("%s(minCount %d, uid %s)", o.Name, o.MinCount, o.UID)
	if o.Terminating {
		s += "[terminating]"
	}
	return s
}

// Member is a live pod of the app: identity, node, phase, and the PodGroup it
// names (empty: none, the pod schedules on its own).
type Member struct {
	Name  string
	UID   types.UID
	Node  string
	Phase corev1.PodPhase
	Group string
}

// State is everything the specs assert on of one app, as one value that
// prints whole when a wait fails.
type State struct {
	Workloads   []Object // by App.Owns
	ReplicaSets []string // a Deployment's; empty for a StatefulSet
	// PodGroups linked to the app: by spec.workloadRef to one of its
	// Workloads, or by a controller ownerReference to the app or one of its
	// ReplicaSets. Terminating ones are included and marked.
	PodGroups []Object
	Pods      []Member // not terminating
	// Terminating names the app's pods that are being deleted.
	Terminating []string
}

func (s State) String() string {
	var pods []string
	for _, p := range s.Pods {
		pods = append(pods, fmt.Sprintf("%s(%s)@%s group=%q", p.Name, p.Phase, p.Node, p.Group))
	}
	return fmt.Sprintf("workloads %v, replicasets %v, podgroups %v, pods [%s], terminating pods %v",
		s.Workloads, s.ReplicaSets, s.PodGroups, strings.Join(pods, " "), s.Terminating)
}

// LivePodGroups is PodGroups without the terminating ones.
func (s State) LivePodGroups() []Object {
	out := []Object{}
	for _, o := range s.PodGroups {
		if !o.Terminating {
			out = append(out, o)
		}
	}
	return out
}

// PodUIDs maps pod name to UID.
func (s State) PodUIDs() map[string]types.UID {
	out := map[string]types.UID{}
	for _, p := range s.Pods {
		out[p.Name] = p.UID
	}
	return out
}

// Grouped counts the pods that name a PodGroup.
func (s State) Grouped() int {
	return len(s.Pods) - len(s.Ungrouped())
}

// Ungrouped lists the pods that name no PodGroup.
func (s State) Ungrouped() []Member {
	var out []Member
	for _, p := range s.Pods {
		if p.Group == "" {
			out = append(out, p)
		}
	}
	return out
}

// Bound counts the pods bound to a node.
func (s State) Bound() int {
	n := 0
	for _, p := range s.Pods {
		if p.Node != "" {
			n++
		}
	}
	return n
}

// Running counts the pods in phase Running.
func (s State) Running() int {
	n := 0
	for _, p := range s.Pods {
		if p.Phase == corev1.PodRunning {
			n++
		}
	}
	return n
}

// PodNames names s's pods that keep accepts (every pod when keep is nil):
// the names WithPods takes.
func (s State) PodNames(keep func(Member) bool) []string {
	var out []string
	for _, p := range s.Pods {
		if keep == nil || keep(p) {
			out = append(out, p.Name)
		}
	}
	return out
}

// WithPods is s with only the named pods: to compare part of an app.
func (s State) WithPods(names ...string) State {
	out := s
	out.Pods = nil
	for _, p := range s.Pods {
		if slices.Contains(names, p.Name) {
			out.Pods = append(out.Pods, p)
		}
	}
	return out
}

// Read reads a's Workloads, ReplicaSets, PodGroups and pods.
func Read(ctx context.Context, f *framework.Framework, a App) State {
	s := State{Workloads: []Object{}, ReplicaSets: []string{}, PodGroups: []Object{}, Pods: []Member{}}
	mine := map[string]bool{}
	for _, w := range Workloads(ctx, f, a) {
		mine[w.Name] = true
		s.Workloads = append(s.Workloads, Object{Name: w.Name, UID: w.UID, ResourceVersion: w.ResourceVersion,
			MinCount: framework.WorkloadMinCount(&w), Terminating: w.DeletionTimestamp != nil})
	}
	owners := []App{a}
	for _, rs := range ReplicaSets(ctx, f, a) {
		s.ReplicaSets = append(s.ReplicaSets, rs.Name)
		owners = append(owners, App{Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID})
	}
	for _, pg := range ListPodGroups(ctx, f) {
		linked := pg.Spec.WorkloadRef != nil && mine[pg.Spec.WorkloadRef.WorkloadName]
		linked = linked || slices.ContainsFunc(owners, func(o App) bool { return o.Controls(&pg) })
		if linked {
			s.PodGroups = append(s.PodGroups, Object{Name: pg.Name, UID: pg.UID, ResourceVersion: pg.ResourceVersion,
				MinCount: framework.PodGroupMinCount(&pg), Terminating: pg.DeletionTimestamp != nil})
		}
	}
	pods, err := framework.ListPods(ctx, Pods(f, a))
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "listing pods of %s", a)
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			s.Terminating = append(s.Terminating, p.Name)
			continue
		}
		m := Member{Name: p.Name, UID: p.UID, Node: p.Spec.NodeName, Phase: p.Status.Phase}
		if p.Spec.SchedulingGroup != nil {
			m.Group = ptr.Deref(p.Spec.SchedulingGroup.PodGroupName, "")
		}
		s.Pods = append(s.Pods, m)
	}
	return s
}
