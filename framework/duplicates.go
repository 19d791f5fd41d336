package framework

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// DuplicateWatcher proves "no duplicate Workload or PodGroup ever existed"
// rather than counting at the end (a duplicate that a controller created and
// then deleted again would pass a final count). It watches a namespace's
// Workloads and PodGroups with informers and, after every event, checks the
// live objects (deletionTimestamp unset):
//
//   - at most one Workload per owner: its controller ownerReference (kind,
//     name, UID), or, without one, its spec.controllerRef (KEP-6277 discovers
//     by that reference);
//   - at most one PodGroup per (Workload, template, owner): the PodGroup's
//     spec.workloadRef and its controller ownerReference (a Deployment's
//     ReplicaSet, a StatefulSet).
//
// A terminating object and its replacement may overlap: the KEPs delete and
// recreate PodGroups (scale to zero and back), which is not a duplicate.
//
// Its watches resume from the last resourceVersion seen when they close, and
// read back from etcd what a restarted kube-apiserver can no longer replay
// (resumeWatch): an informer would relist instead, and a duplicate created
// and deleted in between would never be seen. A gap that cannot be read
// back (etcd compacted) is a violation: the watcher can no longer say that
// none existed.
type DuplicateWatcher struct {
	mu         sync.Mutex
	violations []string
	seen       map[string]bool
	// detected receives each violation when it is first seen (buffered; a
	// full channel drops, Violations still has it).
	detected chan string
	stop     func()
}

// WatchForDuplicates starts a DuplicateWatcher on namespace, returns once
// its watches have started (so start it before creating the workload), and
// stops it when the spec ends.
func WatchForDuplicates(ctx context.Context, cs kubernetes.Interface, namespace string) *DuplicateWatcher {
	ginkgo.GinkgoHelper()
	w, err := startDuplicateWatcher(context.WithoutCancel(ctx), cs, namespace, TestContext.Timeouts.Namespace)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "starting the duplicate Workload/PodGroup watcher in %s", namespace)
	ginkgo.DeferCleanup(w.Stop)
	return w
}

// liveSet is one kind's objects as last seen by the watch, by name.
type liveSet map[string]metav1.Object

func startDuplicateWatcher(ctx context.Context, cs kubernetes.Interface, namespace string, timeout time.Duration) (*DuplicateWatcher, error) {
	ctx, cancel := context.WithCancel(ctx)
	w := &DuplicateWatcher{seen: map[string]bool{}, detected: make(chan string, 16)}
	var dones []<-chan struct{}
	w.stop = func() {
		cancel()
		for _, d := range dones {
			<-d
		}
	}
	wls := cs.SchedulingV1beta1().Workloads(namespace)
	pgs := cs.SchedulingV1beta1().PodGroups(namespace)
	for _, k := range []struct {
		kind string
		c    collection
		key  func(metav1.Object) string
	}{
		{"Workload", collection{what: "Workloads in " + namespace, watch: wls.Watch,
			list: func(ctx context.Context, opts metav1.ListOptions) ([]runtime.Object, string, error) {
				l, err := wls.List(ctx, opts)
				if err != nil {
					return nil, "", err
				}
				return objects(l.Items), l.ResourceVersion, nil
			}}, workloadOwnerKey},
		{"PodGroup", collection{what: "PodGroups in " + namespace, watch: pgs.Watch,
			list: func(ctx context.Context, opts metav1.ListOptions) ([]runtime.Object, string, error) {
				l, err := pgs.List(ctx, opts)
				if err != nil {
					return nil, "", err
				}
				return objects(l.Items), l.ResourceVersion, nil
			}}, podGroupOwnerKey},
	} {
		k.c.listTimeout = timeout
		// Only this watch's goroutine touches live once it runs: each event
		// is checked once the set has it, so every intermediate state is.
		live := liveSet{}
		stopped, err := resumeWatch(ctx, k.c, func(items []runtime.Object) {
			for _, o := range items {
				if m, err := apimeta.Accessor(o); err == nil {
					live[m.GetName()] = m
				}
			}
			w.check(k.kind, live, k.key)
		}, func(ev watch.Event) {
			m, err := apimeta.Accessor(ev.Object)
			if err != nil {
				return
			}
			if ev.Type == watch.Deleted {
				delete(live, m.GetName())
			} else {
				live[m.GetName()] = m
			}
			w.check(k.kind, live, k.key)
		}, func(err error) {
			w.violate(k.kind+"|gap", fmt.Sprintf("%s %ss in %s were not all seen, a duplicate may have come and gone unseen: %v",
				time.Now().Format("15:04:05.000"), k.kind, namespace, err))
		})
		if err != nil {
			w.stop()
			return nil, err
		}
		dones = append(dones, stopped)
	}
	return w, nil
}

func objects[T any, PT interface {
	*T
	runtime.Object
}](items []T) []runtime.Object {
	out := make([]runtime.Object, 0, len(items))
	for i := range items {
		out = append(out, PT(&items[i]))
	}
	return out
}

// check records every owner key that more than one live object shares.
func (w *DuplicateWatcher) check(kind string, live liveSet, key func(metav1.Object) string) {
	byKey := map[string][]string{}
	for _, m := range live {
		if m.GetDeletionTimestamp() != nil {
			continue
		}
		if k := key(m); k != "" {
			byKey[k] = append(byKey[k], m.GetName())
		}
	}
	for k, names := range byKey {
		if len(names) < 2 {
			continue
		}
		slices.Sort(names)
		w.violate(kind+"|"+k+"|"+strings.Join(names, ","),
			fmt.Sprintf("%s %d live %ss for %s: %s", time.Now().Format("15:04:05.000"), len(names), kind, k, strings.Join(names, ", ")))
	}
}

// violate records violation v once per id.
func (w *DuplicateWatcher) violate(id, v string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[id] {
		return
	}
	w.seen[id] = true
	w.violations = append(w.violations, v)
	ginkgo.GinkgoWriter.Printf("DUPLICATE: %s\n", v)
	select {
	case w.detected <- v:
	default:
	}
}

func workloadOwnerKey(o metav1.Object) string {
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		return fmt.Sprintf("owner %s/%s (uid %s)", ref.Kind, ref.Name, ref.UID)
	}
	if wl, ok := o.(*schedulingv1beta1.Workload); ok && wl.Spec.ControllerRef != nil {
		c := wl.Spec.ControllerRef
		return fmt.Sprintf("spec.controllerRef %s/%s/%s", c.APIGroup, c.Kind, c.Name)
	}
	return ""
}

func podGroupOwnerKey(o metav1.Object) string {
	pg, ok := o.(*schedulingv1beta1.PodGroup)
	if !ok || pg.Spec.WorkloadRef == nil {
		return "" // a standalone PodGroup has no counterpart to duplicate
	}
	owner := "no controller"
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		owner = fmt.Sprintf("%s/%s (uid %s)", ref.Kind, ref.Name, ref.UID)
	}
	return fmt.Sprintf("Workload %s template %s, owner %s", pg.Spec.WorkloadRef.WorkloadName, pg.Spec.WorkloadRef.TemplateName, owner)
}

// Detected delivers each violation as it is seen, for specs that select on it.
func (w *DuplicateWatcher) Detected() <-chan string { return w.detected }

// Violations returns every duplicate seen so far, in order.
func (w *DuplicateWatcher) Violations() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.violations)
}

// ExpectNone fails the spec if a duplicate was ever seen.
func (w *DuplicateWatcher) ExpectNone() {
	ginkgo.GinkgoHelper()
	gomega.Expect(w.Violations()).To(gomega.BeEmpty(), "a duplicate Workload or PodGroup existed at some moment, or the watch had a gap")
}

// Stop ends the watch (also done when the spec ends).
func (w *DuplicateWatcher) Stop() { w.stop() }
