package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	typedappsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/kubernetes/pkg/controller"

	"github.com/workload-aware/apps-harness/controllers/ownerguard"
)

// --- Deployment side: a clientset whose ReplicaSet writes first ensure the Workload.

// DeploymentControllerClient wraps the clientset given to the upstream
// Deployment controller. Its ReplicaSet Create and Update (the only ways that
// controller creates or scales ReplicaSets) first ensure the owning
// Deployment's Workload, so the Workload exists before the ReplicaSet and its
// minCount is reconciled before the ReplicaSet is scaled. A failure fails the
// write, and the Deployment controller retries the sync with backoff; the
// reference's worker retries too, and hands the Deployment back once it has
// written the Workload (handback.go), as upstream gives up after 15 tries.
func (r *Reconciler) DeploymentControllerClient(inner kubernetes.Interface) kubernetes.Interface {
	return &deploymentClient{Interface: inner, r: r}
}

type deploymentClient struct {
	kubernetes.Interface
	r *Reconciler
}

func (c *deploymentClient) AppsV1() typedappsv1.AppsV1Interface {
	return &deploymentAppsV1{AppsV1Interface: c.Interface.AppsV1(), r: c.r}
}

type deploymentAppsV1 struct {
	typedappsv1.AppsV1Interface
	r *Reconciler
}

func (a *deploymentAppsV1) ReplicaSets(namespace string) typedappsv1.ReplicaSetInterface {
	return &hookedReplicaSets{ReplicaSetInterface: a.AppsV1Interface.ReplicaSets(namespace), r: a.r}
}

type hookedReplicaSets struct {
	typedappsv1.ReplicaSetInterface
	r *Reconciler
}

// ensure runs before every ReplicaSet write of the Deployment controller. For
// a Deployment going away no Workload is written, but the ReplicaSet write
// still goes through: upstream keeps syncing a terminating Deployment's
// ReplicaSets (status, revision annotations) and must not be blocked.
func (h *hookedReplicaSets) ensure(ctx context.Context, rs *appsv1.ReplicaSet) error {
	if d := h.r.deploymentOf(rs); d != nil {
		_, err := h.r.EnsureWorkload(ctx, d)
		if err = ownerguard.Ignore(err); err != nil {
			h.r.stalled.add(d)
		}
		return err
	}
	return nil
}

func (h *hookedReplicaSets) Create(ctx context.Context, rs *appsv1.ReplicaSet, opts metav1.CreateOptions) (*appsv1.ReplicaSet, error) {
	if err := h.ensure(ctx, rs); err != nil {
		return nil, err
	}
	return h.ReplicaSetInterface.Create(ctx, rs, opts)
}

func (h *hookedReplicaSets) Update(ctx context.Context, rs *appsv1.ReplicaSet, opts metav1.UpdateOptions) (*appsv1.ReplicaSet, error) {
	if err := h.ensure(ctx, rs); err != nil {
		return nil, err
	}
	return h.ReplicaSetInterface.Update(ctx, rs, opts)
}

// --- ReplicaSet side: a PodControl that puts every pod into its PodGroup.

// PodControl wraps the upstream ReplicaSet controller's pod control. Before
// each pod it ensures the ReplicaSet's PodGroup; the pod is created from a copy
// of the template with spec.schedulingGroup set (the stored ReplicaSet is never
// changed), and client must be the one from ReplicaSetControllerClient so the
// pod also gets its non-controller ownerReference to the PodGroup.
func (r *Reconciler) PodControl(inner controller.PodControlInterface) controller.PodControlInterface {
	return &podControl{PodControlInterface: inner, r: r}
}

type podControl struct {
	controller.PodControlInterface
	r *Reconciler
}

// DeletePod reconciles the ReplicaSet's PodGroup before the ReplicaSet
// controller deletes one of its pods: on a scale-down KEP-6276 lowers the
// PodGroup's minCount before any pod goes, so the scheduler never sees a
// gang below its quorum. The worker that also reconciles it on the
// ReplicaSet's update runs beside the ReplicaSet controller and may come
// second (measured: a pod marked for deletion one write before the PodGroup,
// under load). At zero replicas this deletes the PodGroup, which its
// protection finalizer keeps until the pods are gone.
func (p *podControl) DeletePod(ctx context.Context, namespace string, podID string, object runtime.Object) error {
	if rs, ok := object.(*appsv1.ReplicaSet); ok {
		if _, err := p.r.EnsurePodGroup(ctx, rs); ownerguard.Ignore(err) != nil {
			return err
		}
	}
	return p.PodControlInterface.DeletePod(ctx, namespace, podID, object)
}

func (p *podControl) CreatePods(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, object runtime.Object, controllerRef *metav1.OwnerReference) error {
	template, err := p.grouped(ctx, template, object)
	if err != nil {
		return err
	}
	return p.PodControlInterface.CreatePods(ctx, namespace, template, object, controllerRef)
}

func (p *podControl) CreatePodsWithGenerateName(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, object runtime.Object, controllerRef *metav1.OwnerReference, generateName string) error {
	template, err := p.grouped(ctx, template, object)
	if err != nil {
		return err
	}
	return p.PodControlInterface.CreatePodsWithGenerateName(ctx, namespace, template, object, controllerRef, generateName)
}

func (p *podControl) grouped(ctx context.Context, template *corev1.PodTemplateSpec, object runtime.Object) (*corev1.PodTemplateSpec, error) {
	rs, ok := object.(*appsv1.ReplicaSet)
	if !ok {
		return template, nil
	}
	pg, err := p.r.EnsurePodGroup(ctx, rs)
	if err != nil || pg == nil {
		return template, err
	}
	t := template.DeepCopy()
	t.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &pg.Name}
	return t, nil
}

// ReplicaSetControllerClient wraps the clientset of the ReplicaSet controller's
// pod control: a pod created into a PodGroup this reconciler manages gets a
// non-controller ownerReference to it (pod templates carry no ownerReferences,
// so this is the one place to add it).
func (r *Reconciler) ReplicaSetControllerClient(inner kubernetes.Interface) kubernetes.Interface {
	return &replicaSetClient{Interface: inner, r: r}
}

type replicaSetClient struct {
	kubernetes.Interface
	r *Reconciler
}

func (c *replicaSetClient) CoreV1() typedcorev1.CoreV1Interface {
	return &replicaSetCoreV1{CoreV1Interface: c.Interface.CoreV1(), r: c.r}
}

type replicaSetCoreV1 struct {
	typedcorev1.CoreV1Interface
	r *Reconciler
}

func (c *replicaSetCoreV1) Pods(namespace string) typedcorev1.PodInterface {
	return &hookedPods{PodInterface: c.CoreV1Interface.Pods(namespace), r: c.r, namespace: namespace}
}

type hookedPods struct {
	typedcorev1.PodInterface
	r         *Reconciler
	namespace string
}

func (h *hookedPods) Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error) {
	if sg := pod.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
		if uid, ok := h.r.podGroupUID(h.namespace, *sg.PodGroupName, metav1.GetControllerOf(pod)); ok {
			pod = pod.DeepCopy()
			pod.OwnerReferences = append(pod.OwnerReferences, metav1.OwnerReference{
				APIVersion: schedulingv1beta1.SchemeGroupVersion.String(),
				Kind:       "PodGroup",
				Name:       *sg.PodGroupName,
				UID:        uid,
			})
		}
	}
	return h.PodInterface.Create(ctx, pod, opts)
}
