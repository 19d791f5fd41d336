// Package queue runs the reference controllers' small work queues the way the
// upstream controllers run theirs: a key is synced, forgotten on success and
// requeued with rate-limited backoff on error.
package queue

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Process syncs keys from q until it shuts down.
func Process(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error) {
	for {
		key, quit := q.Get()
		if quit {
			return
		}
		if err := sync(ctx, key); err != nil {
			klog.FromContext(ctx).V(2).Info("Requeueing", "key", key, "err", err)
			q.AddRateLimited(key)
		} else {
			q.Forget(key)
		}
		q.Done(key)
	}
}
