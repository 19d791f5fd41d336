package apps

import (
	"context"
	"fmt"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// Kinds of app.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
)

// App names a Deployment or a StatefulSet of the spec's namespace. UID, when
// known, must match too wherever an ownerReference links an object to the
// app, so a recreated app of the same name does not inherit the old one's
// objects.
type App struct {
	Kind, Name string
	UID        types.UID
}

// Deployment is the App of d.
func Deployment(d *appsv1.Deployment) App {
	return App{Kind: KindDeployment, Name: d.Name, UID: d.UID}
}

// StatefulSet is the App of set.
func StatefulSet(set *appsv1.StatefulSet) App {
	return App{Kind: KindStatefulSet, Name: set.Name, UID: set.UID}
}

func (a App) String() string { return a.Kind + "/" + a.Name }

// ControllerRef is the Workload spec.controllerRef that names a.
func (a App) ControllerRef() schedulingv1beta1.TypedLocalObjectReference {
	return schedulingv1beta1.TypedLocalObjectReference{APIGroup: appsv1.GroupName, Kind: a.Kind, Name: a.Name}
}

// Controls reports whether obj has a controller ownerReference to a.
func (a App) Controls(obj metav1.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.Kind == a.Kind && ref.Name == a.Name && (a.UID == "" || ref.UID == a.UID)
}

// Owns reports whether w is a's Workload by the discovery rule of a's KEP:
// a StatefulSet's is the one whose spec.controllerRef names it (KEP-6277,
// "by reference, not by name and not by ownership"); a Deployment's is the
// one it controls (KEP-6276 Alpha uses only objects it creates and owns).
func (a App) Owns(w *schedulingv1beta1.Workload) bool {
	if a.Kind == KindStatefulSet {
		ref := w.Spec.ControllerRef
		return ref != nil && *ref == a.ControllerRef()
	}
	return a.Controls(w)
}

// Pods selects a's pods (the builders label them with the app's name).
func Pods(f *framework.Framework, a App) framework.PodsInput {
	return framework.PodsInput{ClientSet: f.ClientSet, Namespace: f.Namespace, LabelSelector: builder.AppLabel + "=" + a.Name}
}

// Workloads returns a's Workloads (see App.Owns).
func Workloads(ctx context.Context, f *framework.Framework, a App) []schedulingv1beta1.Workload {
	return keep(listWorkloads(ctx, f), a.Owns)
}

// WorkloadsReferencing returns the namespace's Workloads whose
// spec.controllerRef is ref, whoever created them.
func WorkloadsReferencing(ctx context.Context, f *framework.Framework, ref schedulingv1beta1.TypedLocalObjectReference) []schedulingv1beta1.Workload {
	return keep(listWorkloads(ctx, f), func(w *schedulingv1beta1.Workload) bool {
		return w.Spec.ControllerRef != nil && *w.Spec.ControllerRef == ref
	})
}

func listWorkloads(ctx context.Context, f *framework.Framework) []schedulingv1beta1.Workload {
	list, err := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).List(ctx, metav1.ListOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing Workloads")
	return list.Items
}

// ListPodGroups lists every PodGroup of the namespace, terminating ones included.
func ListPodGroups(ctx context.Context, f *framework.Framework) []schedulingv1beta1.PodGroup {
	list, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).List(ctx, metav1.ListOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing PodGroups")
	return list.Items
}

// PodGroupsReferencing returns the PodGroups whose spec.workloadRef names
// workload (discovery by reference), terminating ones included.
func PodGroupsReferencing(ctx context.Context, f *framework.Framework, workload string) []schedulingv1beta1.PodGroup {
	return keep(ListPodGroups(ctx, f), func(pg *schedulingv1beta1.PodGroup) bool {
		return pg.Spec.WorkloadRef != nil && pg.Spec.WorkloadRef.WorkloadName == workload
	})
}

// ReplicaSets returns the ReplicaSets a controls (none for a StatefulSet).
func ReplicaSets(ctx context.Context, f *framework.Framework, a App) []appsv1.ReplicaSet {
	if a.Kind != KindDeployment {
		return nil
	}
	list, err := f.ClientSet.AppsV1().ReplicaSets(f.Namespace).List(ctx, metav1.ListOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing ReplicaSets")
	return keep(list.Items, func(rs *appsv1.ReplicaSet) bool { return a.Controls(rs) })
}

// keep returns the items pred accepts, in order.
func keep[T any](items []T, pred func(*T) bool) []T {
	var out []T
	for i := range items {
		if pred(&items[i]) {
			out = append(out, items[i])
		}
	}
	return out
}

// TheWorkload waits until a has exactly one Workload and returns it.
func TheWorkload(ctx context.Context, f *framework.Framework, a App) schedulingv1beta1.Workload {
	var got []schedulingv1beta1.Workload
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) []string {
		got = Workloads(ctx, f, a)
		return Names(got)
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.HaveLen(1),
		"waiting for exactly one Workload of %s (%s)", a, a.discoveryRule())
	return got[0]
}

// ThePodGroup waits until exactly one PodGroup references w and returns it.
func ThePodGroup(ctx context.Context, f *framework.Framework, w *schedulingv1beta1.Workload) schedulingv1beta1.PodGroup {
	var got []schedulingv1beta1.PodGroup
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) []string {
		got = PodGroupsReferencing(ctx, f, w.Name)
		return Names(got)
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.HaveLen(1),
		"waiting for exactly one PodGroup whose spec.workloadRef names Workload %s", w.Name)
	return got[0]
}

func (a App) discoveryRule() string {
	if a.Kind == KindStatefulSet {
		return fmt.Sprintf("spec.controllerRef %s/%s %s", appsv1.GroupName, a.Kind, a.Name)
	}
	return "controlled by it"
}

// Names returns the names of objects, in order.
func Names[T any, P interface {
	*T
	metav1.Object
}](items []T) []string {
	out := make([]string, 0, len(items))
	for i := range items {
		out = append(out, P(&items[i]).GetName())
	}
	return out
}
