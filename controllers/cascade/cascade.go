// Package cascade finishes a garbage-collection cascade that the KEPs'
// ownership graph cannot finish on its own in Kubernetes 1.37.
//
// Pods name their PodGroup as an owner (both KEPs), and the PodGroup's
// scheduling.k8s.io/podgroup-protection finalizer waits for its pods. When
// the workload is deleted in the background (kubectl's default), the garbage
// collector deletes the PodGroup; but an owner that is being deleted without
// foreground propagation still counts as a live owner, so the collector keeps
// the pods, and neither ever goes. The Finisher deletes the pods of a
// terminating PodGroup whose controller (ReplicaSet or StatefulSet) is gone,
// which is exactly what the collector would have done without the PodGroup
// reference. Pods whose controller lives are never touched.
package cascade

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/workload-aware/apps-harness/controllers/queue"
	"github.com/workload-aware/apps-harness/controllers/schedulingapi"
)

// Finisher deletes the pods of terminating PodGroups whose controller is gone.
type Finisher struct {
	client       kubernetes.Interface
	pods         corelisters.PodLister
	scheduling   *schedulingapi.Informers
	replicaSets  appslisters.ReplicaSetLister  // nil: ReplicaSets are not managed here
	statefulSets appslisters.StatefulSetLister // nil: StatefulSets are not managed here
	queue        workqueue.TypedRateLimitingInterface[string]
}

// Options wires a Finisher; the listers of the kinds not managed may be nil.
type Options struct {
	Client       kubernetes.Interface
	Pods         corelisters.PodLister
	Scheduling   *schedulingapi.Informers
	ReplicaSets  cache.SharedIndexInformer
	RSLister     appslisters.ReplicaSetLister
	StatefulSets cache.SharedIndexInformer
	SetLister    appslisters.StatefulSetLister
}

// New registers event handlers: a terminating PodGroup, seen when it is
// listed (a restart) or when an update sets its deletionTimestamp, and the
// deletion of a managed controller, queue work.
func New(o Options) *Finisher {
	f := &Finisher{
		client: o.Client, pods: o.Pods, scheduling: o.Scheduling, replicaSets: o.RSLister, statefulSets: o.SetLister,
		queue: queue.New("was_podgroup_cascade"),
	}
	terminating := func(obj any) {
		if pg, ok := obj.(*schedulingv1beta1.PodGroup); ok && pg.DeletionTimestamp != nil {
			f.queue.Add(pg.Namespace + "/" + pg.Name)
		}
	}
	_, _ = o.Scheduling.Scheduling().PodGroups().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		// A process that crashed between two of its pod deletions finds
		// the PodGroup already terminating when it lists it again: no
		// update will come for it (found by the crash sweep, D-E6).
		AddFunc:    terminating,
		UpdateFunc: func(_, obj any) { terminating(obj) },
	})
	// A deleted controller may have left a terminating PodGroup behind.
	onDelete := cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if m, ok := obj.(metav1.Object); ok {
			f.enqueueTerminating(m.GetNamespace())
		}
	}}
	for _, inf := range []cache.SharedIndexInformer{o.ReplicaSets, o.StatefulSets} {
		if inf != nil {
			_, _ = inf.AddEventHandler(onDelete)
		}
	}
	return f
}

func (f *Finisher) enqueueTerminating(namespace string) {
	if f.scheduling.Ready() != nil {
		return
	}
	pgs, err := f.scheduling.Scheduling().PodGroups().Lister().PodGroups(namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pg := range pgs {
		if pg.DeletionTimestamp != nil {
			f.queue.Add(pg.Namespace + "/" + pg.Name)
		}
	}
}

// Run processes the queue until ctx ends, and returns once its sync no
// longer runs (the leader-election release waits for that).
func (f *Finisher) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	var wg sync.WaitGroup
	wg.Go(func() {
		wait.UntilWithContext(ctx, func(ctx context.Context) { queue.Process(ctx, f.queue, f.sync) }, time.Second)
	})
	<-ctx.Done()
	f.queue.ShutDown()
	wg.Wait()
}

func (f *Finisher) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	if err := f.scheduling.Ready(); err != nil {
		// Queued from the first list, before the informers synced: retried,
		// not dropped, or the PodGroup would wait for an update that never comes.
		return err
	}
	pg, err := f.scheduling.Scheduling().PodGroups().Lister().PodGroups(ns).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && pg.DeletionTimestamp == nil) {
		return nil
	}
	if err != nil {
		return err
	}
	pods, err := f.pods.Pods(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || !ownedBy(pod.OwnerReferences, pg.UID) || f.controllerAlive(pod) {
			continue
		}
		err := f.client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
		klog.FromContext(ctx).V(2).Info("Deleted a pod of a terminating PodGroup whose controller is gone", "pod", klog.KObj(pod), "podGroup", klog.KObj(pg))
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

// controllerAlive reports whether the pod's controller still exists and is
// not being deleted. Kinds this process does not manage count as alive: their
// pods are never touched. A pod without a controller lost it to the garbage
// collector (it removes dangling references while a live owner remains).
func (f *Finisher) controllerAlive(pod *corev1.Pod) bool {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return false
	}
	switch {
	case ref.Kind == "ReplicaSet" && f.replicaSets != nil:
		rs, err := f.replicaSets.ReplicaSets(pod.Namespace).Get(ref.Name)
		return err == nil && rs.UID == ref.UID && rs.DeletionTimestamp == nil
	case ref.Kind == "StatefulSet" && f.statefulSets != nil:
		set, err := f.statefulSets.StatefulSets(pod.Namespace).Get(ref.Name)
		return err == nil && set.UID == ref.UID && set.DeletionTimestamp == nil
	}
	return true
}
