package statefulset

import (
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/workload-aware/apps-harness/controllers/objcache"
)

// Resolve runs before every pod create and delete and on every StatefulSet
// event, so what it looks up must not cost the whole namespace each time:
// pods by controller (hasPods), Workloads by spec.controllerRef and
// PodGroups by spec.workloadRef come from informer indexes, O(matches)
// rather than O(objects in the namespace) per lookup (measured with
// `make bench-scale`: the namespace-wide lists were a tenth of the
// controller's CPU at 200 Deployments and 100 StatefulSets in one namespace).
const (
	workloadsByControllerRef = "was-statefulset/spec.controllerRef"
	podGroupsByWorkloadRef   = "was-statefulset/spec.workloadRef"
)

func controllerRefKey(namespace string, ref schedulingv1beta1.TypedLocalObjectReference) string {
	return namespace + "/" + ref.APIGroup + "/" + ref.Kind + "/" + ref.Name
}

func workloadRefKey(namespace, workload, template string) string {
	return namespace + "/" + workload + "/" + template
}

// addSchedulingIndexes indexes the shared scheduling informers (kept if
// present: a second Reconciler over the same informers reuses them).
func addSchedulingIndexes(workloads, podGroups cache.SharedIndexInformer) error {
	if _, ok := workloads.GetIndexer().GetIndexers()[workloadsByControllerRef]; !ok {
		err := workloads.AddIndexers(cache.Indexers{workloadsByControllerRef: func(obj any) ([]string, error) {
			w, ok := obj.(*schedulingv1beta1.Workload)
			if !ok || w.Spec.ControllerRef == nil {
				return nil, nil
			}
			return []string{controllerRefKey(w.Namespace, *w.Spec.ControllerRef)}, nil
		}})
		if err != nil {
			return err
		}
	}
	if _, ok := podGroups.GetIndexer().GetIndexers()[podGroupsByWorkloadRef]; !ok {
		return podGroups.AddIndexers(cache.Indexers{podGroupsByWorkloadRef: func(obj any) ([]string, error) {
			pg, ok := obj.(*schedulingv1beta1.PodGroup)
			if !ok || pg.Spec.WorkloadRef == nil {
				return nil, nil
			}
			return []string{workloadRefKey(pg.Namespace, pg.Spec.WorkloadRef.WorkloadName, pg.Spec.WorkloadRef.TemplateName)}, nil
		}})
	}
	return nil
}

// byIndex returns the informer's objects under key of index.
func byIndex[T metav1.Object](informer cache.SharedIndexInformer, index, key string) ([]T, error) {
	objs, err := informer.GetIndexer().ByIndex(index, key)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, obj := range objs {
		if t, ok := obj.(T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// freshest combines the indexed objects with this process's pending writes
// in the namespace, taking the freshest copy of each name: an indexed
// object may have a newer own write, and a pending write is compared with
// the informer's copy of the same name (cached), which may be newer and no
// longer match. The caller filters the result as before.
func freshest[T metav1.Object](indexed, pending []T, cached func(name string) (T, bool), writes *objcache.Writes[T]) []T {
	seen := make(map[string]bool, len(indexed))
	out := make([]T, 0, len(indexed))
	for _, obj := range indexed {
		fresh, _ := writes.Freshest(types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, obj, true)
		out = append(out, fresh)
		seen[obj.GetName()] = true
	}
	for _, obj := range pending {
		if seen[obj.GetName()] {
			continue
		}
		seen[obj.GetName()] = true
		fromInformer, ok := cached(obj.GetName())
		if fresh, found := writes.Freshest(types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, fromInformer, ok); found {
			out = append(out, fresh)
		}
	}
	return out
}
