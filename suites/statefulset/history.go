package statefulset

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/workload-aware/apps-harness/framework"
)

// change is one write to a Workload, PodGroup or pod seen by a history, with
// what the specs compare: gang minCount, termination, readiness.
type change struct {
	Resource string // "workloads", "podgroups" or "pods"
	Type     watch.EventType
	Name     string
	// Revision is the object's resourceVersion in the event: the etcd
	// revision of that write, one counter for the whole cluster.
	Revision uint64
	// MinCount is the gang minCount of a Workload's template or a PodGroup (0: basic).
	MinCount int32
	// Terminating: deletionTimestamp set, or the object deleted.
	Terminating bool
	// Ready: a pod Running with its Ready condition True.
	Ready bool
}

func (c change) String() string {
	s := fmt.Sprintf("rv %d %s %s/%s", c.Revision, strings.ToLower(string(c.Type)), c.Resource, c.Name)
	switch c.Resource {
	case "workloads", "podgroups":
		s += fmt.Sprintf(" minCount=%d", c.MinCount)
	case "pods":
		s += fmt.Sprintf(" ready=%t", c.Ready)
	}
	if c.Terminating {
		s += " terminating"
	}
	return s
}

// history extends framework.RecordCreations to every write (not only
// creations and deletions) of the namespace's Workloads, PodGroups and pods,
// so a spec can prove the order of minCount updates, pod deletions and pod
// readiness by etcd revision rather than by timing.
type history struct {
	mu      sync.Mutex
	changes []change
	stop    func()
}

// recordHistory starts watching from now; it stops at spec end.
func recordHistory(ctx context.Context, f *framework.Framework) *history {
	ctx, cancel := context.WithCancel(ctx)
	h := &history{}
	var wg sync.WaitGroup
	ns := f.Namespace
	sched := f.ClientSet.SchedulingV1beta1()
	start := func(resource string, listRV func() (string, error), watchFrom func(rv string) (watch.Interface, error), read func(runtime.Object, *change) bool) {
		rv, err := listRV()
		gomega.ExpectWithOffset(2, err).NotTo(gomega.HaveOccurred(), "listing %s in %s", resource, ns)
		w, err := watchFrom(rv)
		gomega.ExpectWithOffset(2, err).NotTo(gomega.HaveOccurred(), "watching %s in %s", resource, ns)
		wg.Add(1)
		go func() {
			defer ginkgo.GinkgoRecover()
			defer wg.Done()
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					if ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted {
						continue
					}
					obj, ok := ev.Object.(metav1.Object)
					if !ok {
						continue
					}
					rev, err := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
					if err != nil {
						ginkgo.Fail(fmt.Sprintf("resourceVersion %q of %s/%s is not an etcd revision; ordering cannot be proven", obj.GetResourceVersion(), resource, obj.GetName()))
					}
					c := change{Resource: resource, Type: ev.Type, Name: obj.GetName(), Revision: rev,
						Terminating: ev.Type == watch.Deleted || obj.GetDeletionTimestamp() != nil}
					if !read(ev.Object, &c) {
						continue
					}
					h.mu.Lock()
					h.changes = append(h.changes, c)
					h.mu.Unlock()
				}
			}
		}()
	}
	start("workloads",
		func() (string, error) {
			l, err := sched.Workloads(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return "", err
			}
			return l.ResourceVersion, nil
		},
		func(rv string) (watch.Interface, error) {
			return sched.Workloads(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		},
		func(o runtime.Object, c *change) bool {
			w, ok := o.(*schedulingv1beta1.Workload)
			if ok {
				c.MinCount = templateMinCount(w)
			}
			return ok
		})
	start("podgroups",
		func() (string, error) {
			l, err := sched.PodGroups(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return "", err
			}
			return l.ResourceVersion, nil
		},
		func(rv string) (watch.Interface, error) {
			return sched.PodGroups(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		},
		func(o runtime.Object, c *change) bool {
			pg, ok := o.(*schedulingv1beta1.PodGroup)
			if ok {
				c.MinCount = podGroupMinCount(pg)
			}
			return ok
		})
	start("pods",
		func() (string, error) {
			l, err := f.ClientSet.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return "", err
			}
			return l.ResourceVersion, nil
		},
		func(rv string) (watch.Interface, error) {
			return f.ClientSet.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		},
		func(o runtime.Object, c *change) bool {
			p, ok := o.(*corev1.Pod)
			if ok {
				c.Ready = p.Status.Phase == corev1.PodRunning && podReady(p)
			}
			return ok
		})
	h.stop = func() { cancel(); wg.Wait() }
	ginkgo.DeferCleanup(h.Stop)
	return h
}

// Stop ends the watches.
func (h *history) Stop() { h.stop() }

// sorted returns every change in revision order.
func (h *history) sorted() []change {
	h.mu.Lock()
	out := append([]change(nil), h.changes...)
	h.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	return out
}

// first returns the earliest change of resource that matches.
func (h *history) first(resource string, match func(change) bool) (change, bool) {
	for _, c := range h.sorted() {
		if c.Resource == resource && match(c) {
			return c, true
		}
	}
	return change{}, false
}

// waitFirst waits until a matching change was seen and returns it.
func (h *history) waitFirst(ctx context.Context, f *framework.Framework, resource, what string, match func(change) bool) change {
	var got change
	gomega.EventuallyWithOffset(1, ctx, func() bool {
		var ok bool
		got, ok = h.first(resource, match)
		return ok
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.BeTrue(),
		"waiting to observe %s; observed:\n%s", what, h)
	return got
}

// String lists every change in revision order, for failure messages and the log.
func (h *history) String() string {
	var b strings.Builder
	for _, c := range h.sorted() {
		b.WriteString("  " + c.String() + "\n")
	}
	return b.String()
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Matchers for history.first.

func withMinCount(n int32) func(change) bool {
	return func(c change) bool { return c.MinCount == n && !c.Terminating }
}

func created(name string) func(change) bool {
	return func(c change) bool { return c.Name == name && c.Type == watch.Added }
}

func becameReady(name string) func(change) bool {
	return func(c change) bool { return c.Name == name && c.Ready && !c.Terminating }
}

func terminating(names ...string) func(change) bool {
	return func(c change) bool {
		for _, n := range names {
			if c.Name == n && c.Terminating {
				return true
			}
		}
		return false
	}
}
