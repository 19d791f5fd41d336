package fakeapi

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// WaitWorkloadCached waits until the informer holds Workload name, at
// resourceVersion rv unless rv is empty.
func (a *API) WaitWorkloadCached(name, rv string) {
	a.T.Helper()
	a.waitCachedAt("workload", name, rv, a.cachedWorkload)
}

// WaitWorkloadGone waits until the informer no longer holds Workload name.
func (a *API) WaitWorkloadGone(name string) {
	a.T.Helper()
	a.waitGone("workload", name, a.cachedWorkload)
}

// WaitPodGroupCached waits until the informer holds PodGroup name, at
// resourceVersion rv unless rv is empty.
func (a *API) WaitPodGroupCached(name, rv string) {
	a.T.Helper()
	a.waitCachedAt("podgroup", name, rv, a.cachedPodGroup)
}

// WaitPodGroupGone waits until the informer no longer holds PodGroup name.
func (a *API) WaitPodGroupGone(name string) {
	a.T.Helper()
	a.waitGone("podgroup", name, a.cachedPodGroup)
}

func (a *API) cachedWorkload(name string) (metav1.Object, error) {
	return a.Sched.Scheduling().Workloads().Lister().Workloads(a.Namespace).Get(name)
}

func (a *API) cachedPodGroup(name string) (metav1.Object, error) {
	return a.Sched.Scheduling().PodGroups().Lister().PodGroups(a.Namespace).Get(name)
}

func (a *API) waitCachedAt(kind, name, rv string, cached func(string) (metav1.Object, error)) {
	a.T.Helper()
	a.Eventually(kind+" "+name+" in the informer", func() bool {
		obj, err := cached(name)
		return err == nil && (rv == "" || obj.GetResourceVersion() == rv)
	})
}

func (a *API) waitGone(kind, name string, cached func(string) (metav1.Object, error)) {
	a.T.Helper()
	a.Eventually(kind+" "+name+" gone from the informer", func() bool {
		_, err := cached(name)
		return apierrors.IsNotFound(err)
	})
}

// SyncCaches waits until the scheduling informers hold what the API holds.
func (a *API) SyncCaches() {
	a.T.Helper()
	for _, w := range a.StoredWorkloads() {
		a.WaitWorkloadCached(w.Name, w.ResourceVersion)
	}
	for _, pg := range a.StoredPodGroups() {
		a.WaitPodGroupCached(pg.Name, pg.ResourceVersion)
	}
}

// GetWorkload reads Workload name through the client (a recorded get).
func (a *API) GetWorkload(name string) *schedulingv1beta1.Workload {
	a.T.Helper()
	return get(a, "workload", name, a.Client.SchedulingV1beta1().Workloads(a.Namespace).Get)
}

// GetPodGroup reads PodGroup name through the client (a recorded get).
func (a *API) GetPodGroup(name string) *schedulingv1beta1.PodGroup {
	a.T.Helper()
	return get(a, "podgroup", name, a.Client.SchedulingV1beta1().PodGroups(a.Namespace).Get)
}

// GetPod reads pod name through the client (a recorded get).
func (a *API) GetPod(name string) *corev1.Pod {
	a.T.Helper()
	return get(a, "pod", name, a.Client.CoreV1().Pods(a.Namespace).Get)
}

func get[T any](a *API, kind, name string, get func(context.Context, string, metav1.GetOptions) (T, error)) T {
	a.T.Helper()
	obj, err := get(a.Ctx, name, metav1.GetOptions{})
	if err != nil {
		a.T.Fatalf("getting %s %s: %v", kind, name, err)
	}
	return obj
}

// StoredWorkloads lists the API's Workloads straight from the tracker (no
// action recorded).
func (a *API) StoredWorkloads() []*schedulingv1beta1.Workload {
	a.T.Helper()
	return pointers(a.stored("workloads", "Workload").(*schedulingv1beta1.WorkloadList).Items)
}

// StoredPodGroups lists the API's PodGroups straight from the tracker (no
// action recorded).
func (a *API) StoredPodGroups() []*schedulingv1beta1.PodGroup {
	a.T.Helper()
	return pointers(a.stored("podgroups", "PodGroup").(*schedulingv1beta1.PodGroupList).Items)
}

// stored lists the tracker's objects of a scheduling.k8s.io resource in the
// namespace.
func (a *API) stored(resource, kind string) runtime.Object {
	a.T.Helper()
	gv := schedulingv1beta1.SchemeGroupVersion
	list, err := a.Client.Tracker().List(gv.WithResource(resource), gv.WithKind(kind), a.Namespace)
	if err != nil {
		a.T.Fatal(err)
	}
	return list
}

func pointers[T any](items []T) []*T {
	var out []*T
	for i := range items {
		out = append(out, &items[i])
	}
	return out
}

// OnlyWorkload returns the API's single Workload, failing the test unless
// there is exactly one.
func (a *API) OnlyWorkload() *schedulingv1beta1.Workload {
	a.T.Helper()
	return only(a, "Workloads", a.StoredWorkloads())
}

// OnlyPodGroup returns the API's single PodGroup, failing the test unless
// there is exactly one.
func (a *API) OnlyPodGroup() *schedulingv1beta1.PodGroup {
	a.T.Helper()
	return only(a, "PodGroups", a.StoredPodGroups())
}

func only[T any](a *API, kinds string, items []T) T {
	a.T.Helper()
	if len(items) != 1 {
		a.T.Fatalf("%d %s in the API, want 1", len(items), kinds)
	}
	return items[0]
}
