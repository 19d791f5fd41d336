package framework

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// latest is the resourceVersion of a plain list (default 10); exact
	// answers a list at one revision (resourceVersionMatch=Exact).
	latest string
	exact  func(rv string) ([]*unstructured.Unstructured, error)
}

func (s *scriptedWatches) client() *dynamicfake.FakeDynamicClient {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{WorkloadsResource: "WorkloadList"})
	dyn.PrependReactor("list", "workloads", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts := a.(k8stesting.ListActionImpl).GetListOptions()
		l := &unstructured.UnstructuredList{}
		if opts.ResourceVersionMatch == metav1.ResourceVersionMatchExact {
			items, err := s.exact(opts.ResourceVersion)
			if err != nil {
				return true, nil, err
			}
			for _, u := range items {
				l.Items = append(l.Items, *u)
			}
			l.SetResourceVersion(opts.ResourceVersion)
			return true, l, nil
		}
		l.SetResourceVersion(cmp.Or(s.latest, "10"))
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

// When a restarted apiserver can no longer replay from the last
// resourceVersion (410), the writes in between are read back from etcd's
// history, one revision at a time, so even an object created and deleted
// meanwhile is recorded; then the watch resumes from the latest revision.
func TestWriteHistoryReadsBackWhatAnExpiredWatchMissed(t *testing.T) {
	gone := apierrors.NewResourceExpired("too old resource version: 11 (40)")
	s := &scriptedWatches{latest: "14",
		answers: []func(string) (watch.Interface, error){
			sends(true, workloadAt("w-1", "11")),
			func(string) (watch.Interface, error) { return nil, gone },
			sends(false, workloadAt("w-3", "15")),
		},
		exact: func(rv string) ([]*unstructured.Unstructured, error) {
			return map[string][]*unstructured.Unstructured{
				"12": {workloadAt("w-1", "11"), workloadAt("transient", "12")},
				"13": {workloadAt("w-1", "11")},
				"14": {workloadAt("w-1", "11"), workloadAt("w-2", "14")},
			}[rv], nil
		}}
	h, err := recordWrites(context.Background(), s.client(), "ns", WorkloadsResource)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	waitUntil(t, "five recorded writes", func() bool { return len(h.sorted()) == 5 })
	var got []string
	for _, c := range h.sorted() {
		got = append(got, c.String())
	}
	want := []string{"rv 11 added workloads/w-1 minCount=0", "rv 12 added workloads/transient minCount=0",
		"rv 13 deleted workloads/transient minCount=0 terminating", "rv 14 added workloads/w-2 minCount=0", "rv 15 added workloads/w-3 minCount=0"}
	if !slices.Equal(got, want) {
		t.Errorf("recorded\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if asked := s.watchesAsked(); len(asked) < 3 || asked[2] != "14" {
		t.Errorf("watches asked from %v; want the third from 14, the latest revision read back", asked)
	}
	if err := h.Err(); err != nil {
		t.Errorf("writes read back are no gap: %v", err)
	}
}

// When even etcd no longer has the writes in between (compacted), the
// history says it is incomplete (the spec then fails) rather than passing
// with writes missing. The apiserver refuses the watch either way: the watch
// call fails, or the watch's first event is the error.
func TestWriteHistoryReportsAGapOn410(t *testing.T) {
	gone := apierrors.NewResourceExpired("too old resource version: 11 (40)")
	compacted := func(string) ([]*unstructured.Unstructured, error) {
		return nil, apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
	}
	for name, answer := range map[string]func(string) (watch.Interface, error){
		"watch call fails": func(string) (watch.Interface, error) { return nil, gone },
		"error event": func(string) (watch.Interface, error) {
			w := watch.NewFakeWithChanSize(1, false)
			w.Error(&gone.ErrStatus)
			return w, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := &scriptedWatches{latest: "14", exact: compacted,
				answers: []func(string) (watch.Interface, error){sends(true, workloadAt("w-1", "11")), answer}}
			h, err := recordWrites(context.Background(), s.client(), "ns", WorkloadsResource)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Stop()
			waitUntil(t, "the gap to be reported", func() bool { return h.Err() != nil })
			if msg := h.Err().Error(); !strings.Contains(msg, "incomplete") || !strings.Contains(msg, "reading revision 12 back failed") {
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

// StateBefore is the object as it stood at another write: its last change
// with a lower revision, and nothing when the history saw none.
func TestWriteHistoryStateBefore(t *testing.T) {
	h := &WriteHistory{}
	at := func(rv string) *unstructured.Unstructured {
		u := workloadAt("w", rv)
		u.SetUID("w-uid")
		return u
	}
	h.record("workloads", watch.Event{Type: watch.Added, Object: at("10")})
	h.record("workloads", watch.Event{Type: watch.Modified, Object: at("20")})
	other := workloadAt("other", "12")
	other.SetUID("other-uid")
	h.record("workloads", watch.Event{Type: watch.Added, Object: other})
	for _, c := range []struct {
		before uint64
		want   uint64
		ok     bool
	}{{5, 0, false}, {10, 0, false}, {11, 10, true}, {15, 10, true}, {20, 10, true}, {25, 20, true}} {
		got, ok := h.StateBefore("workloads", "w-uid", c.before)
		if ok != c.ok || got.Revision != c.want {
			t.Errorf("StateBefore(%d) = rv %d, %t; want rv %d, %t", c.before, got.Revision, ok, c.want, c.ok)
		}
	}
}
