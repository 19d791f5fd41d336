package deployment

import (
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// keyedMutex serialises work per object, so the hook and the worker that
// react to the same change cannot both create the same object (which the
// apiserver would refuse, but only after a wasted write).
type keyedMutex struct{ m sync.Map }

func (k *keyedMutex) lock(key types.NamespacedName) func() {
	v, _ := k.m.LoadOrStore(key, &sync.Mutex{})
	mu := v.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// writes remembers the objects this process wrote until its informer has
// caught up, so a read right after a write sees it without another API call.
// Informer delete events forget an entry, so a deleted object is recreated.
type writes[T metav1.Object] struct{ m sync.Map }

func (w *writes[T]) store(key types.NamespacedName, obj T) { w.m.Store(key, obj) }
func (w *writes[T]) forget(key types.NamespacedName)       { w.m.Delete(key) }

// freshest returns the newer of the informer's copy (ok=false: absent) and
// our own last write.
func (w *writes[T]) freshest(key types.NamespacedName, fromInformer T, ok bool) (T, bool) {
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
