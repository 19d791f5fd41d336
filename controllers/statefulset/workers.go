package statefulset

import (
	"context"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/workload-aware/apps-harness/controllers/ownerguard"
	"github.com/workload-aware/apps-harness/controllers/queue"
)

// SyncWorker resolves every StatefulSet with scheduling intent when it is
// added or changes, not only when the upstream controller writes a pod. The
// hooks see scale-ups and scale-downs, but not state that drifted while the
// controller was away: a StatefulSet scaled while WorkloadWithStatefulSet was
// off keeps its old minCount until re-enabled (KEP-6277, "What happens if we
// reenable"), and its pods already exist, so no pod write would come. Resolve
// is idempotent (it writes only what differs), so running it from both paths
// is safe; the per-StatefulSet lock inside serialises them.
type SyncWorker struct {
	r     *Reconciler
	queue workqueue.TypedRateLimitingInterface[string]
}

// NewSyncWorker registers its event handler on the StatefulSet informer.
func NewSyncWorker(r *Reconciler, sets cache.SharedIndexInformer) *SyncWorker {
	w := &SyncWorker{r: r, queue: queue.New("was_statefulset_sync")}
	enqueue := func(obj any) {
		set, ok := obj.(*appsv1.StatefulSet)
		if !ok || r.IntentFor(set) == nil {
			return
		}
		if key, err := cache.MetaNamespaceKeyFunc(set); err == nil {
			w.queue.Add(key)
		}
	}
	_, _ = sets.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	return w
}

// Run processes the queue with n workers until ctx ends, and returns once
// no sync of its workers runs any more (the leader-election release waits
// for that).
func (w *SyncWorker) Run(ctx context.Context, n int) {
	defer utilruntime.HandleCrash()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(ctx context.Context) { queue.Process(ctx, w.queue, w.sync) }, time.Second)
		})
	}
	<-ctx.Done()
	w.queue.ShutDown()
	wg.Wait()
}

func (w *SyncWorker) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	set, err := w.r.sets.StatefulSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if set.DeletionTimestamp != nil {
		return nil
	}
	_, err = w.r.Resolve(ctx, set)
	return ownerguard.Ignore(err)
}
