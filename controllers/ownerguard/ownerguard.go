// Package ownerguard keeps the reference controllers from writing a Workload
// or PodGroup for an owner that is going away.
//
// The controllers act on informer caches, and a cache can be behind in two
// ways that matter here: the owner was deleted (its entry is stale), or it is
// being deleted (foreground deletion, or a finalizer) and the garbage
// collector is removing its dependents. Creating or updating a dependent then
// races the collector: the object appears, is collected, and may appear
// again. Every write path (the wrapped clients, the work queues, the resync
// after a gate flip, the relist after a restart) therefore asks Check right
// before it writes; Check reads the owner from the apiserver, not the cache.
package ownerguard

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ErrOwnerGone means the owner is being deleted, no longer exists, or was
// replaced by a new object of the same name: nothing may be created or
// changed on its behalf. Callers reconciling in the background drop the key;
// callers about to create a pod fail that create so it is retried once the
// cache has caught up.
var ErrOwnerGone = errors.New("owner is going away")

// Getter reads one object by name from the apiserver (a typed client's Get).
type Getter[T metav1.Object] func(ctx context.Context, name string, opts metav1.GetOptions) (T, error)

// Check returns nil when cached is not being deleted and the apiserver holds
// an object of its name with its UID that is not being deleted either.
// Otherwise it returns an error wrapping ErrOwnerGone that names the owner,
// or the read's own error. kind names the owner in the message.
func Check[T metav1.Object](ctx context.Context, kind string, cached metav1.Object, get Getter[T]) error {
	if err := Terminating(kind, cached); err != nil {
		return err
	}
	// An empty resourceVersion is a quorum read: the freshest state, never a cache.
	live, err := get(ctx, cached.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return gone(kind, cached, "no longer exists")
	case err != nil:
		return fmt.Errorf("reading %s %s/%s before writing for it: %w", kind, cached.GetNamespace(), cached.GetName(), err)
	case live.GetUID() != cached.GetUID():
		return gone(kind, cached, fmt.Sprintf("was replaced (live UID %s)", live.GetUID()))
	case live.GetDeletionTimestamp() != nil:
		return gone(kind, cached, "is being deleted")
	}
	return nil
}

// Terminating is the cache-only half of Check: an error wrapping
// ErrOwnerGone when obj carries a deletionTimestamp.
func Terminating(kind string, obj metav1.Object) error {
	if obj.GetDeletionTimestamp() != nil {
		return gone(kind, obj, "is being deleted")
	}
	return nil
}

func gone(kind string, o metav1.Object, why string) error {
	return fmt.Errorf("%s %s/%s (UID %s) %s: %w", kind, o.GetNamespace(), o.GetName(), o.GetUID(), why, ErrOwnerGone)
}

// Ignore returns nil for ErrOwnerGone and err otherwise, for background
// workers: an owner going away is not a failure to retry.
func Ignore(err error) error {
	if errors.Is(err, ErrOwnerGone) {
		return nil
	}
	return err
}
