package framework

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/onsi/ginkgo/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"
)

// collection is one resource in one namespace, as resumeWatch reads it.
type collection struct {
	what string // for messages: "workloads in ns"
	// listTimeout bounds the first list (0: ctx alone).
	listTimeout time.Duration
	list        func(context.Context, metav1.ListOptions) ([]runtime.Object, string, error)
	watch       func(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// maxReplay is the most revisions resumeWatch reads back one by one after a
// watch could not resume (each is one list request; a kube-apiserver restart
// on a busy 2-core cluster spans a few hundred).
const maxReplay = 20000

// resumeWatch lists c, gives the objects to onList (may be nil), and then
// delivers every write after that list to onEvent, in revision order, until ctx ends (done closes
// once it has stopped):
//
//   - a watch that closes (a timeout, a kube-apiserver restart) is opened
//     again from the last resourceVersion delivered, by client-go's
//     RetryWatcher (which also retries 5xx answers and transport errors);
//   - when the apiserver cannot resume from there (410 Gone / "too old
//     resource version": a restarted kube-apiserver's watch cache starts at
//     the revision it started at), the writes in between are read back from
//     etcd's history, a list at each revision (resourceVersionMatch=Exact),
//     and delivered as the events a watch would have given, then the watch
//     resumes from the latest revision;
//   - a watch refused with 401 or 403 (a restarted kube-apiserver whose
//     authorizer has not synced yet) is resumed the same way for up to
//     refusalGrace;
//   - when that history is gone too (etcd compacted past it), or the watch
//     cannot go on for another reason (refused for longer, an object without
//     resourceVersion), the events can no longer be complete: it calls onGap
//     once and stops.
func resumeWatch(ctx context.Context, c collection, onList func([]runtime.Object), onEvent func(watch.Event), onGap func(error)) (<-chan struct{}, error) {
	listCtx, cancel := ctx, context.CancelFunc(func() {})
	if c.listTimeout > 0 {
		listCtx, cancel = context.WithTimeout(ctx, c.listTimeout)
	}
	items, rv, err := c.list(listCtx, metav1.ListOptions{})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", c.what, err)
	}
	if onList != nil {
		onList(items)
	}
	r := &replayer{c: c, rv: rv, live: map[string]runtime.Object{}, onEvent: onEvent}
	for _, o := range items {
		r.live[nameOf(o)] = o
	}
	rw, err := r.newWatch(ctx)
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", c.what, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for rw != nil {
			rw = r.follow(ctx, rw, onGap)
		}
	}()
	return done, nil
}

// replayer is the state of one resumeWatch: the last revision delivered and
// the live objects then, by name.
type replayer struct {
	c       collection
	rv      string
	live    map[string]runtime.Object
	onEvent func(watch.Event)
	// refusedSince is when (UnixNano) the apiserver began refusing the
	// watch calls (401, 403); 0 while it does not. Set from the
	// RetryWatcher's goroutine.
	refusedSince atomic.Int64
}

func (r *replayer) newWatch(ctx context.Context) (*watchtools.RetryWatcher, error) {
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		w, err := r.c.watch(ctx, opts)
		if isExpired(err) {
			// The RetryWatcher retries a watch call that fails this way
			// forever, without a word; as an event it stops and passes it on.
			return errorWatch(err), nil
		}
		if ew, ok := r.refused(err); ok {
			return ew, nil
		}
		return w, err
	}}
	return watchtools.NewRetryWatcherWithContext(ctx, r.rv, lw)
}

// follow delivers rw's events until it ends, and returns the watch to follow
// next (nil: stop).
func (r *replayer) follow(ctx context.Context, rw *watchtools.RetryWatcher, onGap func(error)) *watchtools.RetryWatcher {
	defer rw.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-rw.ResultChan():
			switch {
			case !ok:
				if ctx.Err() == nil {
					onGap(fmt.Errorf("%s: the watch stopped after resourceVersion %s", r.c.what, r.rv))
				}
				return nil
			case ev.Type == watch.Error:
				err := apierrors.FromObject(ev.Object)
				if isExpired(err) {
					err = r.replay(ctx)
				}
				if err == nil {
					next, err2 := r.newWatch(ctx)
					if err2 == nil {
						return next
					}
					err = err2
				}
				if ctx.Err() == nil {
					onGap(fmt.Errorf("%s after resourceVersion %s: %w", r.c.what, r.rv, err))
				}
				return nil
			}
			r.deliver(ev)
		}
	}
}

// refusalGrace is how long resumeWatch keeps resuming a watch the
// apiserver refuses with 401 or 403: a kube-apiserver that has just
// restarted refuses requests until its authorizer's RBAC caches have synced
// (measured on kind: "workloads.scheduling.k8s.io is forbidden: User
// kubernetes-admin" for seconds after a restart). No write is lost meanwhile:
// the watch resumes from the last revision delivered (or reads the missed
// ones back when that revision has expired).
var refusalGrace = 2 * time.Minute // a var: the unit test shortens it

// refused turns a watch call refused with 401 or 403 into a watch whose only
// event is that refusal, which client-go's RetryWatcher retries (its default
// for an error event), for up to refusalGrace since the first refusal after
// the last watch call that succeeded. The call's own error would stop the
// RetryWatcher at once. After the grace the error is returned: a gap.
func (r *replayer) refused(err error) (watch.Interface, bool) {
	if !apierrors.IsForbidden(err) && !apierrors.IsUnauthorized(err) {
		r.refusedSince.Store(0)
		return nil, false
	}
	now := time.Now().UnixNano()
	r.refusedSince.CompareAndSwap(0, now)
	if time.Duration(now-r.refusedSince.Load()) > refusalGrace {
		return nil, false
	}
	return errorWatch(err), true
}

func (r *replayer) deliver(ev watch.Event) {
	if m, err := apimeta.Accessor(ev.Object); err == nil {
		r.rv = m.GetResourceVersion()
		if ev.Type == watch.Deleted {
			delete(r.live, m.GetName())
		} else {
			r.live[m.GetName()] = ev.Object
		}
	}
	r.onEvent(ev)
}

// replay reads every revision after r.rv up to the latest from etcd and
// delivers the changes to the collection as watch events.
func (r *replayer) replay(ctx context.Context) error {
	_, latest, err := r.c.list(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("the watch expired, and listing the latest revision failed: %w", err)
	}
	from, err1 := strconv.ParseInt(r.rv, 10, 64)
	to, err2 := strconv.ParseInt(latest, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("the watch expired, and revisions %q..%q are not etcd revisions to read back: %w", r.rv, latest, err)
	}
	if to < from {
		return fmt.Errorf("the watch expired at revision %d, and the latest list is older, at %d", from, to)
	}
	if to-from > maxReplay {
		return fmt.Errorf("the watch expired, and %d revisions passed since, more than the %d read back", to-from, maxReplay)
	}
	start := time.Now()
	defer func() {
		ginkgo.GinkgoWriter.Printf("%s: the watch expired at revision %d; read back %d revisions up to %d in %s\n",
			r.c.what, from, to-from, to, time.Since(start).Round(time.Millisecond))
	}()
	for n := from + 1; n <= to; n++ {
		var items []runtime.Object
		// A kube-apiserver that has just started may refuse a request for a
		// moment (429 while its cache initialises): only an expired
		// revision is final.
		err := retry.OnError(retry.DefaultBackoff, func(err error) bool { return !isExpired(err) && ctx.Err() == nil }, func() error {
			var err error
			items, _, err = r.c.list(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(n, 10), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
			return err
		})
		if err != nil {
			return fmt.Errorf("the watch expired, and reading revision %d back failed (etcd compacted?): %w", n, err)
		}
		r.apply(n, items)
	}
	r.rv = latest
	return nil
}

// apply delivers the difference between the live objects and items, the
// collection at revision n, as the watch events of revision n.
func (r *replayer) apply(n int64, items []runtime.Object) {
	now := map[string]runtime.Object{}
	for _, o := range items {
		now[nameOf(o)] = o
	}
	for name, old := range r.live {
		if o, ok := now[name]; !ok || uidOf(o) != uidOf(old) {
			gone := old.DeepCopyObject()
			if m, err := apimeta.Accessor(gone); err == nil {
				m.SetResourceVersion(strconv.FormatInt(n, 10))
			}
			r.deliver(watch.Event{Type: watch.Deleted, Object: gone})
		}
	}
	for name, o := range now {
		old, ok := r.live[name]
		switch {
		case !ok:
			r.deliver(watch.Event{Type: watch.Added, Object: o})
		case rvOf(o) != rvOf(old):
			r.deliver(watch.Event{Type: watch.Modified, Object: o})
		}
	}
	r.rv = strconv.FormatInt(n, 10)
}

func nameOf(o runtime.Object) string {
	if m, err := apimeta.Accessor(o); err == nil {
		return m.GetName()
	}
	return ""
}

func uidOf(o runtime.Object) string {
	if m, err := apimeta.Accessor(o); err == nil {
		return string(m.GetUID())
	}
	return ""
}

func rvOf(o runtime.Object) string {
	if m, err := apimeta.Accessor(o); err == nil {
		return m.GetResourceVersion()
	}
	return ""
}

func isExpired(err error) bool {
	return err != nil && (apierrors.IsGone(err) || apierrors.IsResourceExpired(err))
}

// errorWatch is a watch whose only event is err, as the apiserver sends it.
func errorWatch(err error) watch.Interface {
	status := apierrors.NewResourceExpired(err.Error()).ErrStatus
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		status = s.Status()
	}
	w := watch.NewFakeWithChanSize(1, false)
	w.Error(&status)
	return w
}
