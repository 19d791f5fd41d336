package framework

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// Resources the creation recorder can watch.
var (
	WorkloadsResource   = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "workloads"}
	PodGroupsResource   = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"}
	ReplicaSetsResource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	PodsResource        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// Creation is one object creation or deletion seen by a CreationRecorder.
type Creation struct {
	Resource string
	Name     string
	UID      string
	// Revision is the object's resourceVersion in the event: for ADDED, the
	// etcd revision of its creation; for DELETED, of its deletion.
	Revision uint64
	Deleted  bool
}

// CreationRecorder proves ordering from the API rather than assuming it: it
// watches resources in a namespace and records the resourceVersion at which
// each object was created (and deleted). etcd gives one revision counter to
// the whole cluster, so revisions order writes across resources; that is an
// implementation property of etcd3-backed apiservers, which every Kubernetes
// apiserver is, and the recorder fails loudly if a version is not a number.
type CreationRecorder struct {
	mu     sync.Mutex
	events []Creation
	done   func()
}

// RecordCreations starts watching the resources in namespace from now (objects
// that already exist are not reported); stop it with Stop (it also stops at
// spec end).
func RecordCreations(ctx context.Context, namespace string, resources ...schema.GroupVersionResource) *CreationRecorder {
	dyn, err := dynamic.NewForConfig(RESTConfig())
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ctx, cancel := context.WithCancel(ctx)
	r := &CreationRecorder{done: cancel}
	var wg sync.WaitGroup
	for _, gvr := range resources {
		// Watch from the list's revision: a watch without one would first
		// replay every existing object as ADDED.
		list, err := dyn.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing %s in %s", gvr.Resource, namespace)
		w, err := dyn.Resource(gvr).Namespace(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "watching %s in %s", gvr.Resource, namespace)
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
					if ev.Type != watch.Added && ev.Type != watch.Deleted {
						continue
					}
					u, ok := ev.Object.(*unstructured.Unstructured)
					if !ok {
						continue
					}
					rv, err := strconv.ParseUint(u.GetResourceVersion(), 10, 64)
					if err != nil {
						ginkgo.Fail(fmt.Sprintf("resourceVersion %q of %s/%s is not an etcd revision; ordering cannot be proven", u.GetResourceVersion(), gvr.Resource, u.GetName()))
					}
					r.mu.Lock()
					r.events = append(r.events, Creation{Resource: gvr.Resource, Name: u.GetName(), UID: string(u.GetUID()), Revision: rv, Deleted: ev.Type == watch.Deleted})
					r.mu.Unlock()
				}
			}
		}()
	}
	ginkgo.DeferCleanup(r.Stop)
	prev := r.done
	r.done = func() { prev(); wg.Wait() }
	return r
}

// Stop ends the watches.
func (r *CreationRecorder) Stop() { r.done() }

// Creations returns the recorded creations of a resource, oldest first.
func (r *CreationRecorder) Creations(resource string) []Creation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Creation
	for _, e := range r.events {
		if e.Resource == resource && !e.Deleted {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	return out
}

// Deletions returns the recorded deletions of a resource, oldest first.
func (r *CreationRecorder) Deletions(resource string) []Creation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Creation
	for _, e := range r.events {
		if e.Resource == resource && e.Deleted {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	return out
}

// String lists every event in revision order, for failure messages.
func (r *CreationRecorder) String() string {
	r.mu.Lock()
	events := append([]Creation(nil), r.events...)
	r.mu.Unlock()
	sort.Slice(events, func(i, j int) bool { return events[i].Revision < events[j].Revision })
	var b strings.Builder
	for _, e := range events {
		verb := "created"
		if e.Deleted {
			verb = "deleted"
		}
		fmt.Fprintf(&b, "  rv %d %s %s/%s\n", e.Revision, verb, e.Resource, e.Name)
	}
	return b.String()
}
