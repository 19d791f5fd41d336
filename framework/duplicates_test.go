package framework

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/internal/apitest"
)

func ownedBy(kind, name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}}
}

// workload and podGroup pass the apiserver's validation (the first two
// tests run on a real one).
func workload(ns, name string, owners []metav1.OwnerReference) *schedulingv1beta1.Workload {
	tp := schedulingv1beta1.PodGroupTemplate{Name: "t"}
	tp.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
	return &schedulingv1beta1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: owners},
		Spec:       schedulingv1beta1.WorkloadSpec{PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{tp}},
	}
}

func podGroup(ns, name, workload string, owners []metav1.OwnerReference) *schedulingv1beta1.PodGroup {
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: owners},
		Spec:       schedulingv1beta1.PodGroupSpec{WorkloadRef: &schedulingv1beta1.WorkloadReference{WorkloadName: workload, TemplateName: "t"}},
	}
	pg.Spec.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
	return pg
}

// waitFor polls cond for up to 5s: a watch delivers asynchronously.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// A duplicate that exists only for a moment is still reported: the watcher
// checks every event, not the final state.
func TestDuplicateWatcherReportsATransientDuplicateWorkload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	api := apitest.Start(t)
	cs, ns := api.Client, api.Namespace(t)
	w, err := startDuplicateWatcher(ctx, cs, ns, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	wl := cs.SchedulingV1beta1().Workloads(ns)
	owner := ownedBy("Deployment", "d", "uid-d")
	if _, err := wl.Create(ctx, workload(ns, "d-1", owner), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Another owner's Workload is not a duplicate.
	if _, err := wl.Create(ctx, workload(ns, "e-1", ownedBy("Deployment", "e", "uid-e")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "two Workloads in the informer", func() bool { l, _ := wl.List(ctx, metav1.ListOptions{}); return len(l.Items) == 2 })
	if v := w.Violations(); len(v) != 0 {
		t.Fatalf("violations before any duplicate: %v", v)
	}
	if _, err := wl.Create(ctx, workload(ns, "d-2", owner), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-w.Detected():
		if !strings.Contains(v, "d-1, d-2") || !strings.Contains(v, "uid-d") {
			t.Errorf("violation %q does not name both Workloads and the owner", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the duplicate Workload was not detected")
	}
	if err := wl.Delete(ctx, "d-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := w.Violations(); len(got) != 1 {
		t.Errorf("after the duplicate went, Violations = %v; want the one that existed", got)
	}
}

func TestDuplicateWatcherPodGroupsPerWorkloadAndOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	api := apitest.Start(t)
	cs, ns := api.Client, api.Namespace(t)
	w, err := startDuplicateWatcher(ctx, cs, ns, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	pgs := cs.SchedulingV1beta1().PodGroups(ns)
	// One PodGroup per ReplicaSet revision of one Workload: fine.
	for _, pg := range []*schedulingv1beta1.PodGroup{
		podGroup(ns, "d-aaa", "d-1", ownedBy("ReplicaSet", "d-aaa", "uid-rs1")),
		podGroup(ns, "d-bbb", "d-1", ownedBy("ReplicaSet", "d-bbb", "uid-rs2")),
	} {
		if _, err := pgs.Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A terminating PodGroup and its replacement may overlap: deleted, it
	// stays while its finalizer does (no controller here removes it).
	terminating := podGroup(ns, "s-old", "s-1", ownedBy("StatefulSet", "s", "uid-s"))
	terminating.Finalizers = []string{"scheduling.k8s.io/podgroup-protection"}
	if _, err := pgs.Create(ctx, terminating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pgs.Delete(ctx, "s-old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if pg, err := pgs.Get(ctx, "s-old", metav1.GetOptions{}); err != nil || pg.DeletionTimestamp == nil {
		t.Fatalf("s-old is not terminating: %v", err)
	}
	if _, err := pgs.Create(ctx, podGroup(ns, "s-new", "s-1", ownedBy("StatefulSet", "s", "uid-s")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Now a real duplicate: a second live PodGroup for the first ReplicaSet.
	if _, err := pgs.Create(ctx, podGroup(ns, "d-aaa-2", "d-1", ownedBy("ReplicaSet", "d-aaa", "uid-rs1")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the duplicate PodGroup to be reported", func() bool { return len(w.Violations()) > 0 })
	got := w.Violations()
	if len(got) != 1 || !strings.Contains(got[0], "d-aaa, d-aaa-2") {
		t.Errorf("Violations = %v; want exactly the two PodGroups of ReplicaSet d-aaa", got)
	}
}

// On client-go's fake: a real server cannot be made to close a watch, answer
// 410 and have its history compacted on cue.
//
// A watch that closes between two creations is resumed, so a duplicate
// created after it is still seen. A resumption the apiserver answers with 410
// (a restarted kube-apiserver no longer has the events in between) is filled
// from etcd's history, so a duplicate that came and went meanwhile is still
// seen; when etcd no longer has them either, the gap is reported.
func TestDuplicateWatcherResumesAndReportsGaps(t *testing.T) {
	owner := ownedBy("Deployment", "d", "uid-d")
	first, second := workload("ns", "d-1", owner), workload("ns", "d-2", owner)
	first.ResourceVersion, second.ResourceVersion = "11", "12"
	first.UID, second.UID = "uid-1", "uid-2"
	gone := apierrors.NewResourceExpired("too old resource version: 11 (40)")
	expired := func() (watch.Interface, error) { return nil, gone }
	for name, tc := range map[string]struct {
		rewatch func() (watch.Interface, error)
		// exact answers a list at one revision (nil: etcd compacted).
		exact map[string][]schedulingv1beta1.Workload
		want  string
	}{
		"closed watch": {rewatch: func() (watch.Interface, error) {
			w := watch.NewFakeWithChanSize(1, false)
			w.Add(second)
			return w, nil
		}, want: "d-1, d-2"},
		"410, read back from etcd": {rewatch: expired, want: "d-1, d-2", exact: map[string][]schedulingv1beta1.Workload{
			"12": {*first, *second}, "13": {*first}}},
		"410, etcd compacted": {rewatch: expired, want: "not all seen"},
	} {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset()
			var calls atomic.Int32
			cs.PrependWatchReactor("workloads", func(k8stesting.Action) (bool, watch.Interface, error) {
				if calls.Add(1) == 1 {
					w := watch.NewFakeWithChanSize(1, false)
					w.Add(first)
					w.Stop() // the apiserver restarts
					return true, w, nil
				}
				if calls.Load() > 2 { // after the read-back: quiet
					return true, watch.NewFake(), nil
				}
				w, err := tc.rewatch()
				return true, w, err
			})
			cs.PrependReactor("list", "workloads", func(a k8stesting.Action) (bool, runtime.Object, error) {
				opts := a.(k8stesting.ListActionImpl).GetListOptions()
				if opts.ResourceVersionMatch != metav1.ResourceVersionMatchExact {
					return true, &schedulingv1beta1.WorkloadList{ListMeta: metav1.ListMeta{ResourceVersion: map[bool]string{true: "10", false: "13"}[calls.Load() == 0]}}, nil
				}
				if tc.exact == nil {
					return true, nil, apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
				}
				return true, &schedulingv1beta1.WorkloadList{ListMeta: metav1.ListMeta{ResourceVersion: opts.ResourceVersion}, Items: tc.exact[opts.ResourceVersion]}, nil
			})
			w, err := startDuplicateWatcher(context.Background(), cs, "ns", 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			select {
			case v := <-w.Detected():
				if !strings.Contains(v, tc.want) {
					t.Errorf("violation %q; want one with %q", v, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("nothing reported; want a violation with %q", tc.want)
			}
		})
	}
}
