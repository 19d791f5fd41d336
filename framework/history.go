package framework

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// Resources a WriteHistory can watch.
var (
	WorkloadsResource   = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "workloads"}
	PodGroupsResource   = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"}
	ReplicaSetsResource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	PodsResource        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	// PVCsResource and ResourceClaimsResource: for specs that count the
	// creations and deletions of an app's volumes and claims.
	PVCsResource           = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	ResourceClaimsResource = schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaims"}
)

// Change is one write seen by a WriteHistory, with what specs compare.
type Change struct {
	Resource string
	Type     watch.EventType
	Name     string
	UID      string
	// Revision is the object's resourceVersion in the event: the etcd
	// revision of that write.
	Revision uint64
	// MinCount is the gang minCount of a Workload's first template or of a
	// PodGroup (0: basic, or another resource).
	MinCount int32
	// Terminating: deletionTimestamp set, or the object deleted.
	Terminating bool
	// Ready: a pod Running with its Ready condition True.
	Ready bool
	// Replicas is a ReplicaSet's spec.replicas (0 for another resource).
	Replicas int32
	// Fields, for a Modified event, are the fields this write changed
	// against the version of the object the history saw before it: dotted
	// paths to the changed leaves (list items by index, e.g.
	// spec.podGroupTemplates[0].schedulingPolicy.gang.minCount), sorted,
	// comma-separated, without those every write changes
	// (metadata.resourceVersion, managedFields, generation). FieldsUnknown
	// when the history never saw the earlier version (the object existed
	// before it started). Empty for Added and Deleted.
	Fields string
}

// FieldsUnknown is Change.Fields of a write whose earlier version was not seen.
const FieldsUnknown = "?"

// ChangedFields returns c.Fields as a list.
func (c Change) ChangedFields() []string {
	if c.Fields == "" {
		return nil
	}
	return strings.Split(c.Fields, ",")
}

// Changed says whether the write changed the field at path or below it
// (path "status" matches status.conditions[0].type); a write whose earlier
// version was not seen may have changed anything.
func (c Change) Changed(path string) bool {
	for _, f := range c.ChangedFields() {
		if f == FieldsUnknown || f == path || strings.HasPrefix(f, path+".") || strings.HasPrefix(f, path+"[") {
			return true
		}
	}
	return false
}

// OnlyStatus says whether a Modified write changed status and nothing else:
// a write through the status subresource, which keeps spec and metadata.
func (c Change) OnlyStatus() bool {
	fs := c.ChangedFields()
	for _, f := range fs {
		if f != "status" && !strings.HasPrefix(f, "status.") && !strings.HasPrefix(f, "status[") {
			return false
		}
	}
	return len(fs) > 0
}

func (c Change) String() string {
	s := fmt.Sprintf("rv %d %s %s/%s", c.Revision, strings.ToLower(string(c.Type)), c.Resource, c.Name)
	switch c.Resource {
	case "workloads", "podgroups":
		s += fmt.Sprintf(" minCount=%d", c.MinCount)
		if c.Fields != "" {
			s += " changed=" + c.Fields
		}
	case "pods":
		s += fmt.Sprintf(" ready=%t", c.Ready)
	case "replicasets":
		s += fmt.Sprintf(" replicas=%d", c.Replicas)
	}
	if c.Terminating {
		s += " terminating"
	}
	return s
}

// WriteHistory proves ordering from the API rather than assuming it: it
// watches resources in a namespace from now and records every write with its
// resourceVersion. etcd gives one revision counter to the whole cluster, so
// revisions order writes across resources; that is a property of every
// etcd3-backed apiserver, and the recorder fails loudly if a version is not a
// number.
//
// A watch that closes (a kube-apiserver restart, which a native
// implementation's admission change causes; a watch timeout) is resumed from
// the last resourceVersion recorded, and writes the apiserver can no longer
// replay are read back from etcd's history (resumeWatch), so no write is
// lost. When even that is gone (etcd compacted), the history has a gap:
// every read of it then fails the spec, saying so, instead of judging a
// history with writes missing.
type WriteHistory struct {
	mu      sync.Mutex
	changes []Change
	gaps    []string
	stop    func()
	// seen is the last version recorded of each object (by UID), what a
	// Modified event's Fields are computed against.
	seen map[string]seenVersion
}

type seenVersion struct {
	revision uint64
	content  map[string]any
}

// RecordWrites starts watching the resources in namespace from now (objects
// that already exist are not replayed); it stops at Stop or at spec end, and
// fails the spec then if the history had a gap.
func RecordWrites(ctx context.Context, namespace string, resources ...schema.GroupVersionResource) *WriteHistory {
	ginkgo.GinkgoHelper()
	dyn, err := dynamic.NewForConfig(RESTConfig())
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	h, err := recordWrites(ctx, dyn, namespace, resources...)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(func() {
		h.Stop()
		h.expectComplete()
	})
	return h
}

// recordWrites is RecordWrites on any dynamic client, without Ginkgo.
func recordWrites(ctx context.Context, dyn dynamic.Interface, namespace string, resources ...schema.GroupVersionResource) (*WriteHistory, error) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h := &WriteHistory{}
	var dones []<-chan struct{}
	h.stop = func() {
		cancel()
		for _, d := range dones {
			<-d
		}
	}
	for _, gvr := range resources {
		client := dyn.Resource(gvr).Namespace(namespace)
		c := collection{what: gvr.Resource + " in " + namespace, watch: client.Watch,
			list: func(ctx context.Context, opts metav1.ListOptions) ([]runtime.Object, string, error) {
				l, err := client.List(ctx, opts)
				if err != nil {
					return nil, "", err
				}
				out := make([]runtime.Object, len(l.Items))
				for i := range l.Items {
					out[i] = &l.Items[i]
				}
				return out, l.GetResourceVersion(), nil
			}}
		// Objects that already exist are not replayed: the watch starts at
		// the list's revision.
		done, err := resumeWatch(ctx, c, nil,
			func(ev watch.Event) { h.record(gvr.Resource, ev) },
			func(err error) { h.gap(gvr.Resource, namespace, err) })
		if err != nil {
			h.stop()
			return nil, err
		}
		dones = append(dones, done)
	}
	return h, nil
}

func (h *WriteHistory) record(resource string, ev watch.Event) {
	u, ok := ev.Object.(*unstructured.Unstructured)
	if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted) {
		return
	}
	rv, err := strconv.ParseUint(u.GetResourceVersion(), 10, 64)
	if err != nil {
		h.gap(resource, u.GetNamespace(), fmt.Errorf("resourceVersion %q of %s is not an etcd revision; ordering cannot be proven", u.GetResourceVersion(), u.GetName()))
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	c := describe(resource, ev.Type, u, rv)
	content := comparedContent(u)
	if prev, ok := h.seen[c.UID]; ev.Type == watch.Modified {
		switch {
		case !ok:
			c.Fields = FieldsUnknown
		case prev.revision < rv:
			c.Fields = strings.Join(changedPaths(prev.content, content), ",")
		}
	}
	if h.seen == nil {
		h.seen = map[string]seenVersion{}
	}
	if prev, ok := h.seen[c.UID]; !ok || prev.revision < rv {
		h.seen[c.UID] = seenVersion{revision: rv, content: content}
	}
	h.changes = append(h.changes, c)
}

// comparedContent is the object without the fields every write changes.
func comparedContent(u *unstructured.Unstructured) map[string]any {
	out := runtime.DeepCopyJSON(u.Object)
	if md, ok := out["metadata"].(map[string]any); ok {
		delete(md, "resourceVersion")
		delete(md, "managedFields")
		delete(md, "generation")
	}
	return out
}

// changedPaths returns the dotted paths of the leaves that differ between a
// and b, sorted: maps by key, lists of equal length by index, anything else
// (a list that grew or shrank, a scalar) as a whole.
func changedPaths(a, b map[string]any) []string {
	var out []string
	var walk func(path string, x, y any)
	walk = func(path string, x, y any) {
		xm, xok := x.(map[string]any)
		ym, yok := y.(map[string]any)
		if xok && yok {
			keys := map[string]bool{}
			for k := range xm {
				keys[k] = true
			}
			for k := range ym {
				keys[k] = true
			}
			for k := range keys {
				walk(strings.TrimPrefix(path+"."+k, "."), xm[k], ym[k])
			}
			return
		}
		xl, xok := x.([]any)
		yl, yok := y.([]any)
		if xok && yok && len(xl) == len(yl) {
			for i := range xl {
				walk(fmt.Sprintf("%s[%d]", path, i), xl[i], yl[i])
			}
			return
		}
		if !reflect.DeepEqual(x, y) {
			out = append(out, path)
		}
	}
	walk("", a, b)
	sort.Strings(out)
	return out
}

func (h *WriteHistory) gap(resource, namespace string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gaps = append(h.gaps, fmt.Sprintf("%s in %s: %v", resource, namespace, err))
}

// Err says why the history is incomplete (nil: every write since it started
// was recorded).
func (h *WriteHistory) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.gaps) == 0 {
		return nil
	}
	return fmt.Errorf("the write history is incomplete, writes after these points were not seen, so no claim about the whole history can be judged: %s", strings.Join(h.gaps, "; "))
}

// expectComplete fails the spec if the history has a gap.
func (h *WriteHistory) expectComplete() {
	if err := h.Err(); err != nil {
		ginkgo.Fail(err.Error(), 2)
	}
}

// describe extracts what specs compare from any watched object.
func describe(resource string, t watch.EventType, u *unstructured.Unstructured, rv uint64) Change {
	c := Change{Resource: resource, Type: t, Name: u.GetName(), UID: string(u.GetUID()), Revision: rv,
		Terminating: t == watch.Deleted || u.GetDeletionTimestamp() != nil}
	switch resource {
	case "workloads":
		if templates, _, _ := unstructured.NestedSlice(u.Object, "spec", "podGroupTemplates"); len(templates) > 0 {
			if t0, ok := templates[0].(map[string]any); ok {
				m, _, _ := unstructured.NestedInt64(t0, "schedulingPolicy", "gang", "minCount")
				c.MinCount = int32(m)
			}
		}
	case "podgroups":
		m, _, _ := unstructured.NestedInt64(u.Object, "spec", "schedulingPolicy", "gang", "minCount")
		c.MinCount = int32(m)
	case "replicasets":
		r, found, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		if !found {
			r = 1
		}
		c.Replicas = int32(r)
	case "pods":
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, raw := range conditions {
			if cond, ok := raw.(map[string]any); ok && cond["type"] == "Ready" {
				c.Ready = phase == "Running" && cond["status"] == "True"
			}
		}
	}
	return c
}

// Stop ends the watches.
func (h *WriteHistory) Stop() { h.stop() }

// Sorted returns every change in revision order; it fails the spec if the
// history has a gap.
func (h *WriteHistory) Sorted() []Change {
	h.expectComplete()
	return h.sorted()
}

func (h *WriteHistory) sorted() []Change {
	h.mu.Lock()
	out := append([]Change(nil), h.changes...)
	h.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Revision < out[j].Revision })
	return out
}

func (h *WriteHistory) ofType(resource string, t watch.EventType) []Change {
	var out []Change
	for _, c := range h.Sorted() {
		if c.Resource == resource && c.Type == t {
			out = append(out, c)
		}
	}
	return out
}

// Creations returns the creations of a resource, oldest first.
func (h *WriteHistory) Creations(resource string) []Change { return h.ofType(resource, watch.Added) }

// Deletions returns the deletions of a resource, oldest first.
func (h *WriteHistory) Deletions(resource string) []Change { return h.ofType(resource, watch.Deleted) }

// First returns the earliest change of resource that matches.
func (h *WriteHistory) First(resource string, match func(Change) bool) (Change, bool) {
	for _, c := range h.Sorted() {
		if c.Resource == resource && match(c) {
			return c, true
		}
	}
	return Change{}, false
}

// StateBefore returns the last change of the object uid of resource with a
// revision below revision: the object as it stood when that write happened.
// False when the history saw no such change.
func (h *WriteHistory) StateBefore(resource, uid string, revision uint64) (Change, bool) {
	var last Change
	found := false
	for _, c := range h.Sorted() {
		if c.Revision >= revision {
			break
		}
		if c.Resource == resource && c.UID == uid {
			last, found = c, true
		}
	}
	return last, found
}

// WaitFirst waits until a matching change was seen and returns it.
func (h *WriteHistory) WaitFirst(ctx context.Context, resource, what string, match func(Change) bool) Change {
	var got Change
	gomega.EventuallyWithOffset(1, ctx, func() bool {
		var ok bool
		got, ok = h.First(resource, match)
		return ok
	}).WithTimeout(TestContext.Timeouts.PodsBound).WithPolling(TestContext.Timeouts.Poll).Should(gomega.BeTrue(),
		"waiting to observe %s; observed:\n%s", what, h)
	return got
}

// String lists every change in revision order, and any gap, for failure
// messages and logs.
func (h *WriteHistory) String() string {
	var b strings.Builder
	for _, c := range h.sorted() {
		b.WriteString("  " + c.String() + "\n")
	}
	if err := h.Err(); err != nil {
		b.WriteString("  GAP: " + err.Error() + "\n")
	}
	return b.String()
}

// Matchers for First and WaitFirst.

// WithMinCount matches a live object at gang minCount n.
func WithMinCount(n int32) func(Change) bool {
	return func(c Change) bool { return c.MinCount == n && !c.Terminating }
}

// Created matches the creation of name.
func Created(name string) func(Change) bool {
	return func(c Change) bool { return c.Name == name && c.Type == watch.Added }
}

// BecameReady matches a write that shows pod name Running and Ready.
func BecameReady(name string) func(Change) bool {
	return func(c Change) bool { return c.Name == name && c.Ready && !c.Terminating }
}

// Terminating matches the first write that marks one of names as going away.
func Terminating(names ...string) func(Change) bool {
	return func(c Change) bool {
		for _, n := range names {
			if c.Name == n && c.Terminating {
				return true
			}
		}
		return false
	}
}
