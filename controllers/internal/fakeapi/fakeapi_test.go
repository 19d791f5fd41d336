package fakeapi

import (
	"errors"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

const ns = "fake-ns"

func workload(name string) *schedulingv1beta1.Workload {
	return &schedulingv1beta1.Workload{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
}

// The controllers' optimistic concurrency is only tested if the fake API
// refuses stale writes the way the apiserver does.
func TestSchedulingObjectsGetUIDsResourceVersionsAndConflicts(t *testing.T) {
	a := New(t, Options{Namespace: ns})
	wc := a.Client.SchedulingV1beta1().Workloads(ns)
	created, err := wc.Create(a.Ctx, workload("w"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.ResourceVersion == "" {
		t.Fatalf("created Workload has uid %q resourceVersion %q, want both set", created.UID, created.ResourceVersion)
	}
	stale := created.DeepCopy()
	created.Labels = map[string]string{"v": "2"}
	updated, err := wc.Update(a.Ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.UID != created.UID || updated.ResourceVersion == created.ResourceVersion {
		t.Errorf("update: uid %q rv %q, want uid %q kept and a fresh rv (was %q)", updated.UID, updated.ResourceVersion, created.UID, created.ResourceVersion)
	}
	if _, err := wc.Update(a.Ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update with stale resourceVersion: err = %v, want a conflict", err)
	}
	if got := a.GetWorkload("w"); got.ResourceVersion != updated.ResourceVersion || got.Labels["v"] != "2" {
		t.Errorf("stored Workload = %+v, want the first update", got.ObjectMeta)
	}
}

func TestNewPodsArePending(t *testing.T) {
	a := New(t, Options{Namespace: ns})
	pod, err := a.Client.CoreV1().Pods(ns).Create(a.Ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Status.Phase != corev1.PodPending || a.GetPod("p").Status.Phase != corev1.PodPending {
		t.Errorf("phase = %q, want Pending", pod.Status.Phase)
	}
}

// An injected failure wins over the controller's own semantics (React) and
// ends with Heal.
func TestFailWinsOverReactUntilHeal(t *testing.T) {
	a := New(t, Options{Namespace: ns})
	reacted := 0
	a.React("create", "workloads", func(clienttesting.Action) (bool, runtime.Object, error) {
		reacted++
		return false, nil, nil
	})
	injected := errors.New("connection reset")
	a.Fail("create", "workloads", injected)
	wc := a.Client.SchedulingV1beta1().Workloads(ns)
	if _, err := wc.Create(a.Ctx, workload("w"), metav1.CreateOptions{}); !errors.Is(err, injected) {
		t.Errorf("create while failing: err = %v, want %v", err, injected)
	}
	if reacted != 0 || len(a.StoredWorkloads()) != 0 {
		t.Errorf("a failed create reached the reactors (%d) or the store (%d)", reacted, len(a.StoredWorkloads()))
	}
	a.Heal("create", "workloads")
	if _, err := wc.Create(a.Ctx, workload("w"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create after Heal: %v", err)
	}
	if reacted != 1 || a.OnlyWorkload().UID == "" {
		t.Errorf("after Heal: reacted %d times, stored %+v; want the reactor and the apiserver semantics to run", reacted, a.OnlyWorkload().ObjectMeta)
	}
}

// Writes behind the controllers' backs record no action, and Seed and
// UpdateBehindTheBack return only once the informers have the write.
func TestBehindTheBackWritesReachTheInformersUnrecorded(t *testing.T) {
	a := New(t, Options{Namespace: ns})
	a.StartScheduling()
	a.Client.ClearActions()
	w := workload("w")
	a.Seed(w)
	if got, err := a.cachedWorkload("w"); err != nil || got.GetResourceVersion() != w.ResourceVersion || w.UID == "" {
		t.Fatalf("after Seed the informer has %v, %v; want rv %s and a UID", got, err, w.ResourceVersion)
	}
	w.Labels = map[string]string{"changed": "yes"}
	a.UpdateBehindTheBack(w)
	if got, _ := a.cachedWorkload("w"); got.GetLabels()["changed"] != "yes" {
		t.Errorf("after UpdateBehindTheBack the informer has labels %v", got.GetLabels())
	}
	a.DeleteBehindTheBack("workloads", "w")
	a.WaitWorkloadGone("w")
	a.Store(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: ns}})
	if got := a.Writes(); len(got) != 0 {
		t.Errorf("writes behind the back were recorded: %v", got)
	}
	if _, err := a.Client.AppsV1().Deployments(ns).Get(a.Ctx, "d", metav1.GetOptions{}); err != nil {
		t.Errorf("Store: %v", err)
	}
}

func TestWritesListMutationsOnly(t *testing.T) {
	actions := []clienttesting.Action{
		clienttesting.NewGetAction(schedulingv1beta1.Resource("workloads").WithVersion("v1beta1"), ns, "w"),
		clienttesting.NewCreateAction(schedulingv1beta1.Resource("podgroups").WithVersion("v1beta1"), ns, nil),
		clienttesting.NewCreateAction(corev1.Resource("events").WithVersion("v1"), ns, nil),
		clienttesting.NewDeleteAction(corev1.Resource("pods").WithVersion("v1"), ns, "p"),
		clienttesting.NewListAction(corev1.Resource("pods").WithVersion("v1"), corev1.SchemeGroupVersion.WithKind("Pod"), ns, metav1.ListOptions{}),
	}
	if got, want := Writes(actions), []string{"create podgroups", "delete pods"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Writes = %v, want %v", got, want)
	}
}
