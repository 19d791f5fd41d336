package framework

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// scriptedWatches is a fake dynamic client whose successive watches of
// Workloads are answered by the functions in order (the last one repeats),
// each given the resourceVersion the watch asked for.
type scriptedWatches struct {
	mu      sync.Mutex
	asked   []string
	answers []func(rv string) (watch.Interface, error)
}

func (s *scriptedWatches) client() *dynamicfake.FakeDynamicClient {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{WorkloadsResource: "WorkloadList"})
	dyn.PrependReactor("list", "workloads", func(k8stesting.Action) (bool, runtime.Object, error) {
		l := &unstructured.UnstructuredList{}
		l.SetResourceVersion("10")
		return true, l, nil
	})
	dyn.PrependWatchReactor("workloads", func(a k8stesting.Action) (bool, watch.Interface, error) {
		rv := a.(k8stesting.WatchAction).GetWatchRestrictions().ResourceVersion
		s.mu.Lock()
		defer s.mu.Unlock()
		s.asked = append(s.asked, rv)
		answer := s.answers[min(len(s.asked), len(s.answers))-1]
		w, err := answer(rv)
		return true, w, err
	})
	return dyn
}

func (s *scriptedWatches) watchesAsked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.asked...)
}

func workloadAt(name, rv string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("scheduling.k8s.io/v1beta1")
	u.SetKind("Workload")
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetResourceVersion(rv)
	return u
}

// sends returns a watch answer that delivers objs as ADDED, then closes the
// watch if closeAfter (as an apiserver restart or a watch timeout does).
func sends(closeAfter bool, objs ...*unstructured.Unstructured) func(string) (watch.Interface, error) {
	return func(string) (watch.Interface, error) {
		w := watch.NewFakeWithChanSize(len(objs)+1, false)
		for _, o := range objs {
			w.Add(o)
		}
		if closeAfter {
			w.Stop()
		}
		return w, nil
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// A watch that closes after the first creation (kube-apiserver restarting)
// is resumed from that creation's resourceVersion: the second creation,
// delivered by the next watch, is recorded too.
func TestWriteHistoryResumesAClosedWatch(t *testing.T) {
	s := &scriptedWatches{answers: []func(string) (watch.Interface, error){
		sends(true, workloadAt("w-1", "11")),
		sends(false, workloadAt("w-2", "12")),
	}}
	h, err := recordWrites(context.Background(), s.client(), "ns", WorkloadsResource)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	waitUntil(t, "two recorded creations", func() bool { return len(h.sorted()) == 2 })
	if got := h.sorted(); got[0].Name != "w-1" || got[1].Name != "w-2" {
		t.Errorf("recorded %v; want the creations of w-1 then w-2", got)
	}
	if asked := s.watchesAsked(); len(asked) < 2 || asked[0] != "10" || asked[1] != "11" {
		t.Errorf("watches asked from resourceVersions %v; want 10 (the list's) then 11 (the last event's)", asked)
	}
	if err := h.Err(); err != nil {
		t.Errorf("a resumed watch is no gap: %v", err)
	}
}

// When the apiserver can no longer replay from the last resourceVersion, the
// history says it is incomplete (the spec then fails) rather than passing
// with writes missing. The apiserver answers either way: the watch call
// fails, or the watch's first event is the error.
func TestWriteHistoryReportsAGapOn410(t *testing.T) {
	gone := apierrors.NewResourceExpired("too old resource version: 11 (40)")
	for name, answer := range map[string]func(string) (watch.Interface, error){
		"watch call fails": func(string) (watch.Interface, error) { return nil, gone },
		"error event": func(string) (watch.Interface, error) {
			w := watch.NewFakeWithChanSize(1, false)
			w.Error(&gone.ErrStatus)
			return w, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := &scriptedWatches{answers: []func(string) (watch.Interface, error){sends(true, workloadAt("w-1", "11")), answer}}
			h, err := recordWrites(context.Background(), s.client(), "ns", WorkloadsResource)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Stop()
			waitUntil(t, "the gap to be reported", func() bool { return h.Err() != nil })
			if msg := h.Err().Error(); !strings.Contains(msg, "incomplete") || !strings.Contains(msg, "too old resource version") {
				t.Errorf("gap message %q does not say the history is incomplete and why", msg)
			}
			if got := h.sorted(); len(got) != 1 || got[0].Name != "w-1" {
				t.Errorf("recorded %v; want w-1's creation, before the gap", got)
			}
		})
	}
}

// A watch that ends as its context does is no gap.
func TestWriteHistoryStopIsNoGap(t *testing.T) {
	s := &scriptedWatches{answers: []func(string) (watch.Interface, error){sends(false, workloadAt("w-1", "11"))}}
	h, err := recordWrites(context.Background(), s.client(), "ns", WorkloadsResource)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "one recorded creation", func() bool { return len(h.sorted()) == 1 })
	h.Stop()
	if err := h.Err(); err != nil {
		t.Errorf("stopping the history reported a gap: %v", err)
	}
}
