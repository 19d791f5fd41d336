package deployment

import (
	"context"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/workload-aware/apps-harness/controllers/objcache"
	"github.com/workload-aware/apps-harness/controllers/ownerguard"
	"github.com/workload-aware/apps-harness/controllers/queue"
)

// Workers reconcile what the hooks do not see: a Workload or PodGroup deleted
// behind the controllers' backs, a ReplicaSet reaching zero (its PodGroup is
// deleted), a minCount change that creates no pod, and a gate turned on for
// Deployments that already run. (Background deletion of a whole Deployment is
// finished by controllers/cascade.) Every path ends in EnsureWorkload or
// EnsurePodGroup, so the hooks and the workers cannot disagree.
type Workers struct {
	r           *Reconciler
	replicaSets appslisters.ReplicaSetLister
	deployQueue workqueue.TypedRateLimitingInterface[string]
	rsQueue     workqueue.TypedRateLimitingInterface[string]
}

// NewWorkers registers event handlers on the given informers.
func NewWorkers(r *Reconciler, deployments, replicaSets cache.SharedIndexInformer, rsLister appslisters.ReplicaSetLister) *Workers {
	w := &Workers{
		r:           r,
		replicaSets: rsLister,

		deployQueue: queue.New("was_deployment_workload"),
		rsQueue:     queue.New("was_replicaset_podgroup"),
	}
	r.stalled.setRetry(w.deployQueue.Add)
	enqueue := func(q workqueue.TypedRateLimitingInterface[string]) func(obj any) {
		return func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				q.Add(key)
			}
		}
	}
	_, _ = deployments.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue(w.deployQueue),
		UpdateFunc: func(_, obj any) { enqueue(w.deployQueue)(obj) },
	})
	_, _ = replicaSets.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue(w.rsQueue),
		UpdateFunc: func(_, obj any) { enqueue(w.rsQueue)(obj) },
		// A pruned ReplicaSet may have left its PodGroup (DeletePrunedPodGroups).
		DeleteFunc: w.replicaSetDeleted,
	})
	sched := r.scheduling.Scheduling()
	_, _ = sched.Workloads().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { w.workloadChanged(obj) },
		DeleteFunc: w.workloadChanged,
	})
	_, _ = sched.PodGroups().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { w.podGroupChanged(obj) },
		DeleteFunc: w.podGroupChanged,
	})
	return w
}

// workloadChanged requeues the owning Deployment (to recreate or fix the
// Workload) and its ReplicaSets (to follow the template's minCount).
func (w *Workers) workloadChanged(obj any) {
	wl, ok := objcache.Unwrap[*schedulingv1beta1.Workload](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(wl)
	if ref == nil || ref.Kind != "Deployment" {
		return
	}
	w.deployQueue.Add(wl.Namespace + "/" + ref.Name)
	rss, err := w.replicaSets.ReplicaSets(wl.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, rs := range rss {
		if c := metav1.GetControllerOf(rs); c != nil && c.UID == ref.UID {
			w.rsQueue.Add(rs.Namespace + "/" + rs.Name)
		}
	}
}

func (w *Workers) podGroupChanged(obj any) {
	pg, ok := objcache.Unwrap[*schedulingv1beta1.PodGroup](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(pg); ref != nil && ref.Kind == "ReplicaSet" {
		w.rsQueue.Add(pg.Namespace + "/" + ref.Name)
	}
}

// Run processes both queues until ctx ends, and returns once no sync of
// its workers runs any more (the leader-election release waits for that).
func (w *Workers) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(ctx context.Context) { queue.Process(ctx, w.deployQueue, w.syncDeployment) }, time.Second)
		})
		wg.Go(func() {
			wait.UntilWithContext(ctx, func(ctx context.Context) { queue.Process(ctx, w.rsQueue, w.syncReplicaSet) }, time.Second)
		})
	}
	<-ctx.Done()
	w.deployQueue.ShutDown()
	w.rsQueue.ShutDown()
	wg.Wait()
}

func (w *Workers) syncDeployment(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	d, err := w.r.deployments.Deployments(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil // garbage collection removes the Workload
	}
	if err != nil {
		return err
	}
	if _, err = w.r.EnsureWorkload(ctx, d); err == nil {
		w.r.resumed(d)
		if d.DeletionTimestamp == nil {
			err = w.r.DeletePrunedPodGroups(ctx, d, w.replicaSets)
		}
	}
	return ownerguard.Ignore(err)
}

// replicaSetDeleted requeues the Deployment of a deleted ReplicaSet.
func (w *Workers) replicaSetDeleted(obj any) {
	rs, ok := objcache.Unwrap[*appsv1.ReplicaSet](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(rs); ref != nil && ref.Kind == "Deployment" {
		w.deployQueue.Add(rs.Namespace + "/" + ref.Name)
	}
}

func (w *Workers) syncReplicaSet(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	rs, err := w.replicaSets.ReplicaSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if rs.DeletionTimestamp != nil {
		return nil
	}
	_, err = w.r.EnsurePodGroup(ctx, rs)
	return ownerguard.Ignore(err)
}
