// Package queue runs the reference controllers' small work queues the way the
// upstream controllers run theirs: a key is synced, forgotten on success and
// requeued with rate-limited backoff on error.
package queue

import (
	"context"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// MaxBackoff bounds the delay before a failing key is retried. Client-go's
// default controller rate limiter doubles up to 1000 s, so after an outage of
// a few minutes (the scheduling API not served, the apiserver down) a key
// would wait up to 16 minutes more; the KEPs ask the controllers to converge
// once the API is served again.
const MaxBackoff = 30 * time.Second

// New returns a work queue named name whose keys back off exponentially from
// 5 ms up to MaxBackoff, with client-go's default overall rate (10 qps, burst
// 100) as the other bound.
func New(name string) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter(), workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
}

func rateLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, MaxBackoff),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

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
