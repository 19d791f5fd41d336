package deployment

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/tools/cache"
)

// stalled remembers the Deployments whose upstream sync the ReplicaSet hook
// failed. The upstream Deployment controller drops such a key after 15
// failures (about 3 minutes of backoff), so once the reference's own worker
// has written the Workload it hands the Deployment back (Options.HandBack),
// and the upstream controller creates or scales its ReplicaSet at once.
type stalled struct {
	mu   sync.Mutex
	keys map[string]struct{}
	// retry queues the key for the reference's worker (set by NewWorkers):
	// its queue never drops a key.
	retry func(key string)
}

// setRetry wires the reference's worker queue (NewWorkers).
func (s *stalled) setRetry(retry func(key string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retry = retry
}

// add records that an upstream sync of d failed in the hook.
func (s *stalled) add(d *appsv1.Deployment) {
	key := cache.MetaObjectToName(d).String()
	s.mu.Lock()
	if s.keys == nil {
		s.keys = map[string]struct{}{}
	}
	s.keys[key] = struct{}{}
	retry := s.retry
	s.mu.Unlock()
	if retry != nil {
		retry(key)
	}
}

// take reports whether d was stalled, and forgets it.
func (s *stalled) take(d *appsv1.Deployment) bool {
	key := cache.MetaObjectToName(d).String()
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.keys[key]
	delete(s.keys, key)
	return ok
}

// resumed hands d back to the upstream Deployment controller if a hook failed
// one of its syncs since the last hand-back. Called after the Workload was
// ensured.
func (r *Reconciler) resumed(d *appsv1.Deployment) {
	if r.stalled.take(d) && r.handBack != nil {
		r.handBack(d)
	}
}
