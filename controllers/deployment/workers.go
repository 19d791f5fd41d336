package deployment

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Workers reconcile what the hooks do not see: a Workload or PodGroup deleted
// behind the controllers' backs, a ReplicaSet reaching zero (its PodGroup is
// deleted), a minCount change that creates no pod, and a gate turned on for
// Deployments that already run. Every path ends in EnsureWorkload or
// EnsurePodGroup, so the hooks and the workers cannot disagree.
type Workers struct {
	r           *Reconciler
	replicaSets appslisters.ReplicaSetLister
	pods        corelisters.PodLister
	deployQueue workqueue.TypedRateLimitingInterface[string]
	rsQueue     workqueue.TypedRateLimitingInterface[string]
	// cascadeQueue holds terminating PodGroups whose pods lost their ReplicaSet.
	cascadeQueue workqueue.TypedRateLimitingInterface[string]
}

// NewWorkers registers event handlers on the given informers.
func NewWorkers(r *Reconciler, deployments, replicaSets cache.SharedIndexInformer, rsLister appslisters.ReplicaSetLister, pods corelisters.PodLister) *Workers {
	w := &Workers{
		r:           r,
		replicaSets: rsLister,
		pods:        pods,
		cascadeQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "was_podgroup_cascade"}),
		deployQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "was_deployment_workload"}),
		rsQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "was_replicaset_podgroup"}),
	}
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
		// A deleted ReplicaSet's PodGroup has its name (PodGroupName follows
		// the ReplicaSet naming rule): let the cascade look at it again.
		DeleteFunc: enqueue(w.cascadeQueue),
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
	wl, ok := unwrap[*schedulingv1beta1.Workload](obj)
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
	pg, ok := unwrap[*schedulingv1beta1.PodGroup](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(pg); ref != nil && ref.Kind == "ReplicaSet" {
		w.rsQueue.Add(pg.Namespace + "/" + ref.Name)
		if pg.DeletionTimestamp != nil {
			w.cascadeQueue.Add(pg.Namespace + "/" + pg.Name)
		}
	}
}

func unwrap[T any](obj any) (T, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	v, ok := obj.(T)
	return v, ok
}

// Run processes both queues until ctx ends.
func (w *Workers) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	defer w.deployQueue.ShutDown()
	defer w.rsQueue.ShutDown()
	defer w.cascadeQueue.ShutDown()
	go wait.UntilWithContext(ctx, func(ctx context.Context) { w.process(ctx, w.cascadeQueue, w.syncCascade) }, time.Second)
	for range workers {
		go wait.UntilWithContext(ctx, func(ctx context.Context) { w.process(ctx, w.deployQueue, w.syncDeployment) }, time.Second)
		go wait.UntilWithContext(ctx, func(ctx context.Context) { w.process(ctx, w.rsQueue, w.syncReplicaSet) }, time.Second)
	}
	<-ctx.Done()
}

func (w *Workers) process(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error) {
	for {
		key, quit := q.Get()
		if quit {
			return
		}
		err := sync(ctx, key)
		if err == nil {
			q.Forget(key)
		} else {
			klog.FromContext(ctx).V(2).Info("Requeueing", "queue", q, "key", key, "err", err)
			q.AddRateLimited(key)
		}
		q.Done(key)
	}
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
	_, err = w.r.EnsureWorkload(ctx, d)
	return err
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
	return err
}

// syncCascade finishes a garbage-collection cascade that KEP-6276's ownership
// graph cannot finish on its own. When a Deployment or ReplicaSet is deleted
// in the background (the default), the garbage collector deletes the PodGroup,
// whose podgroup-protection finalizer then waits for its pods; but each pod
// also names that PodGroup as an owner, and an owner that is being deleted
// without foreground propagation still counts as a live owner, so the
// collector keeps the pods: neither ever goes. The ReplicaSet side therefore
// deletes the pods of a terminating PodGroup it created once their ReplicaSet
// is gone, which is what the collector would have done without the PodGroup
// reference. Pods whose ReplicaSet still lives are left alone.
func (w *Workers) syncCascade(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pg, err := w.r.scheduling.Scheduling().PodGroups().Lister().PodGroups(ns).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && pg.DeletionTimestamp == nil) {
		return nil
	}
	if err != nil {
		return err
	}
	pods, err := w.pods.Pods(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || !ownedBy(pod.OwnerReferences, pg.UID) || w.hasLiveReplicaSet(pod) {
			continue
		}
		err := w.r.replicaSetClient.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
		klog.FromContext(ctx).V(2).Info("Deleted pod of a terminating PodGroup whose ReplicaSet is gone", "pod", klog.KObj(pod), "podGroup", klog.KObj(pg))
	}
	return nil
}

func ownedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid {
			return true
		}
	}
	return false
}

// hasLiveReplicaSet reports whether the pod's controller is a ReplicaSet that
// exists and is not being deleted.
func (w *Workers) hasLiveReplicaSet(pod *corev1.Pod) bool {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return false
	}
	rs, err := w.replicaSets.ReplicaSets(pod.Namespace).Get(ref.Name)
	return err == nil && rs.UID == ref.UID && rs.DeletionTimestamp == nil
}
