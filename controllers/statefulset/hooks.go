package statefulset

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/workload-aware/apps-harness/controllers/ownerguard"
	"github.com/workload-aware/apps-harness/controllers/schedulingapi"
)

// ControllerClient wraps the clientset given to the upstream StatefulSet
// controller, the only way it creates and deletes pods:
//
//   - Create resolves the StatefulSet's Workload and PodGroup first (creating
//     them while it has no pods, syncing minCount), then creates the pod with
//     spec.schedulingGroup.podGroupName and an ownerReference to the PodGroup;
//   - Delete syncs minCount first, so a scale-down lowers the Workload
//     template and the PodGroup before any pod goes.
//
// An error from either step fails the pod write; the controller retries.
func (r *Reconciler) ControllerClient(inner kubernetes.Interface) kubernetes.Interface {
	return &client{Interface: inner, r: r}
}

type client struct {
	kubernetes.Interface
	r *Reconciler
}

func (c *client) CoreV1() typedcorev1.CoreV1Interface {
	return &coreV1{CoreV1Interface: c.Interface.CoreV1(), r: c.r}
}

type coreV1 struct {
	typedcorev1.CoreV1Interface
	r *Reconciler
}

func (c *coreV1) Pods(namespace string) typedcorev1.PodInterface {
	return &pods{PodInterface: c.CoreV1Interface.Pods(namespace), r: c.r, namespace: namespace}
}

type pods struct {
	typedcorev1.PodInterface
	r         *Reconciler
	namespace string
}

// setOf returns the StatefulSet controlling the pod, from the cache.
func (r *Reconciler) setOf(pod *corev1.Pod) *appsv1.StatefulSet {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "StatefulSet" {
		return nil
	}
	set, err := r.sets.StatefulSets(pod.Namespace).Get(ref.Name)
	if err != nil || set.UID != ref.UID {
		return nil
	}
	return set
}

func (p *pods) Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error) {
	if set := p.r.setOf(pod); set != nil && pod.Spec.SchedulingGroup == nil {
		pg, err := p.r.Resolve(ctx, set)
		if err != nil {
			return nil, err
		}
		if pg != nil {
			pod = Grouped(pod, pg)
		}
	}
	return p.PodInterface.Create(ctx, pod, opts)
}

func (p *pods) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	if pod, err := p.r.pods.Pods(p.namespace).Get(name); err == nil {
		if set := p.r.setOf(pod); set != nil {
			// With the scheduling API not served there is no minCount to lower:
			// deleting pods must not wait for it.
			// Nor for a StatefulSet going away: its pods go regardless.
			_, err := p.r.Resolve(ctx, set)
			if err = ownerguard.Ignore(err); err != nil && !errors.Is(err, schedulingapi.ErrNotServed) {
				return err
			}
		}
	}
	return p.PodInterface.Delete(ctx, name, opts)
}

// Grouped returns a copy of pod that joins pg: spec.schedulingGroup and a
// non-controller ownerReference. The pod's resourceClaims are the template's,
// never injected.
func Grouped(pod *corev1.Pod, pg *schedulingv1beta1.PodGroup) *corev1.Pod {
	pod = pod.DeepCopy()
	pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &pg.Name}
	pod.OwnerReferences = append(pod.OwnerReferences, metav1.OwnerReference{
		APIVersion: schedulingv1beta1.SchemeGroupVersion.String(),
		Kind:       "PodGroup",
		Name:       pg.Name,
		UID:        pg.UID,
	})
	return pod
}
