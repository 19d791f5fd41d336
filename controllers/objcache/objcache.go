// Package objcache holds what the reference controllers need between a write
// and their informers catching up: per-object locks, so the hook and the
// worker reacting to one change cannot both create an object, and a cache of
// their own writes, so a read right after a write sees it.
package objcache

import (
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// KeyedMutex serialises work per object, so the hook and the worker that
// react to the same change cannot both create the same object (which the
// apiserver would refuse, but only after a wasted write).
type KeyedMutex struct{ m sync.Map }

// Lock locks key and returns the unlock function.
func (k *KeyedMutex) Lock(key types.NamespacedName) func() {
	v, _ := k.m.LoadOrStore(key, &sync.Mutex{})
	mu := v.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// Writes remembers the objects this process wrote until its informer has
// caught up, so a read right after a write sees it without another API call.
// Informer delete events forget an entry, so a deleted object is recreated.
type Writes[T metav1.Object] struct{ m sync.Map }

// Store records obj as written by this process.
func (w *Writes[T]) Store(key types.NamespacedName, obj T) { w.m.Store(key, obj) }

// Forget drops key (call it on informer delete events).
func (w *Writes[T]) Forget(key types.NamespacedName) { w.m.Delete(key) }

// Freshest returns the newer of the informer's copy (ok=false: absent) and
// our own last write.
func (w *Writes[T]) Freshest(key types.NamespacedName, fromInformer T, ok bool) (T, bool) {
	v, mine := w.m.Load(key)
	if !mine {
		return fromInformer, ok
	}
	own := v.(T)
	if ok && (fromInformer.GetUID() != own.GetUID() || newerOrSame(fromInformer.GetResourceVersion(), own.GetResourceVersion())) {
		w.m.Delete(key) // the informer caught up, or the object was replaced
		return fromInformer, true
	}
	return own, true
}

// newerOrSame compares resource versions; they are etcd revisions in practice,
// and anything unparsable counts as not newer.
func newerOrSame(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x >= y
}

// Pending returns the objects written here that the informer may not have yet,
// for callers that list rather than get (merge them by UID).
func (w *Writes[T]) Pending(namespace string) []T {
	var out []T
	w.m.Range(func(k, v any) bool {
		if k.(types.NamespacedName).Namespace == namespace {
			out = append(out, v.(T))
		}
		return true
	})
	return out
}

// Unwrap returns obj as T, looking inside an informer's DeletedFinalStateUnknown.
func Unwrap[T any](obj any) (T, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	v, ok := obj.(T)
	return v, ok
}

// ForgetOnDelete makes w forget an object when informer reports it deleted, so
// the next read does not take a stale own write for the live object (and
// skips recreating it).
func ForgetOnDelete[T metav1.Object](informer cache.SharedIndexInformer, w *Writes[T]) {
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if o, ok := Unwrap[T](obj); ok {
			w.Forget(types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
		}
	}})
}

// Deletions remembers the objects this process asked to delete, by UID, until
// the informer reports them gone. An object with a finalizer outlives its
// delete, and until the informer shows its deletionTimestamp a second
// reconcile would delete it again: a second write the KEPs do not list.
type Deletions struct{ m sync.Map }

// Mark records that the object key with uid was deleted here.
func (d *Deletions) Mark(key types.NamespacedName, uid types.UID) { d.m.Store(key, uid) }

// Requested reports whether this process already deleted the object key with uid.
func (d *Deletions) Requested(key types.NamespacedName, uid types.UID) bool {
	v, ok := d.m.Load(key)
	return ok && v.(types.UID) == uid
}

// ForgetDeletionsOnDelete makes d forget an object once informer reports it gone.
func ForgetDeletionsOnDelete[T metav1.Object](informer cache.SharedIndexInformer, d *Deletions) {
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if o, ok := Unwrap[T](obj); ok {
			d.m.Delete(types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()})
		}
	}})
}
