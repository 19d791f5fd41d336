package builder

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// AppLabel is the label key the Deployment and StatefulSet builders use for
// their selector and pod template labels (value: the object's name).
const AppLabel = "app"

// defaultPodTemplate returns a pod template labelled app=<name> with the Pod
// builder's default spec.
func defaultPodTemplate(name string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{AppLabel: name}},
		Spec:       defaultPodSpec(),
	}
}

// DeploymentWrapper builds an apps/v1 Deployment.
type DeploymentWrapper struct {
	appsv1.Deployment
}

// Deployment returns a wrapper for a Deployment named name in namespace ns with
// 1 replica, selector and pod template labels app=<name>, and a pod template
// carrying the same defaults as Pod (see Pod).
func Deployment(name, ns string) *DeploymentWrapper {
	return &DeploymentWrapper{Deployment: appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{AppLabel: name}},
			Template: defaultPodTemplate(name),
		},
	}}
}

// Obj returns a deep copy of the built Deployment.
func (d *DeploymentWrapper) Obj() *appsv1.Deployment {
	return d.Deployment.DeepCopy()
}

// Label sets a label on the Deployment's own metadata (not on the pod
// template; use PodTemplate for that).
func (d *DeploymentWrapper) Label(key, value string) *DeploymentWrapper {
	setLabel(&d.ObjectMeta, key, value)
	return d
}

// Annotation sets an annotation on the Deployment's own metadata (not on the
// pod template; use PodTemplate for that).
func (d *DeploymentWrapper) Annotation(key, value string) *DeploymentWrapper {
	setAnnotation(&d.ObjectMeta, key, value)
	return d
}

// OwnerReference appends an owner reference to the Deployment.
func (d *DeploymentWrapper) OwnerReference(ref metav1.OwnerReference) *DeploymentWrapper {
	d.OwnerReferences = append(d.OwnerReferences, ref)
	return d
}

// Replicas sets spec.replicas.
func (d *DeploymentWrapper) Replicas(n int32) *DeploymentWrapper {
	d.Spec.Replicas = &n
	return d
}

// Recreate sets the Recreate strategy (and clears any rollingUpdate params).
func (d *DeploymentWrapper) Recreate() *DeploymentWrapper {
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	return d
}

// RollingUpdate sets the RollingUpdate strategy with the given maxSurge and
// maxUnavailable (e.g. intstr.FromInt32(1), intstr.FromString("25%")).
func (d *DeploymentWrapper) RollingUpdate(maxSurge, maxUnavailable intstr.IntOrString) *DeploymentWrapper {
	d.Spec.Strategy = appsv1.DeploymentStrategy{
		Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxSurge:       &maxSurge,
			MaxUnavailable: &maxUnavailable,
		},
	}
	return d
}

// ProgressDeadlineSeconds sets spec.progressDeadlineSeconds.
func (d *DeploymentWrapper) ProgressDeadlineSeconds(n int32) *DeploymentWrapper {
	d.Spec.ProgressDeadlineSeconds = &n
	return d
}

// PodTemplate runs fn against the pod template, so every PodWrapper option
// (Label, Request, NodeSelector, ResourceClaim, ...) applies to it. Changing
// the template's app label does not change the selector.
func (d *DeploymentWrapper) PodTemplate(fn func(*PodWrapper)) *DeploymentWrapper {
	mutatePodTemplate(&d.Spec.Template, fn)
	return d
}

// Request is shorthand for PodTemplate(func(p) { p.Request(resourceName, quantity) }).
func (d *DeploymentWrapper) Request(resourceName corev1.ResourceName, quantity string) *DeploymentWrapper {
	return d.PodTemplate(func(p *PodWrapper) { p.Request(resourceName, quantity) })
}

// SchedulingGroup is shorthand for
// PodTemplate(func(p) { p.SchedulingGroup(podGroupName) }): every replica
// points at the same PodGroup.
func (d *DeploymentWrapper) SchedulingGroup(podGroupName string) *DeploymentWrapper {
	return d.PodTemplate(func(p *PodWrapper) { p.SchedulingGroup(podGroupName) })
}

// StatefulSetWrapper builds an apps/v1 StatefulSet.
type StatefulSetWrapper struct {
	appsv1.StatefulSet
}

// StatefulSet returns a wrapper for a StatefulSet named name in namespace ns
// with 1 replica, serviceName=<name>, selector and pod template labels
// app=<name>, and a pod template carrying the same defaults as Pod. The pod
// management and update strategies are left to server defaults (OrderedReady,
// RollingUpdate).
func StatefulSet(name, ns string) *StatefulSetWrapper {
	return &StatefulSetWrapper{StatefulSet: appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](1),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{AppLabel: name}},
			Template:    defaultPodTemplate(name),
		},
	}}
}

// Obj returns a deep copy of the built StatefulSet.
func (s *StatefulSetWrapper) Obj() *appsv1.StatefulSet {
	return s.StatefulSet.DeepCopy()
}

// Label sets a label on the StatefulSet's own metadata (not on the pod
// template; use PodTemplate for that).
func (s *StatefulSetWrapper) Label(key, value string) *StatefulSetWrapper {
	setLabel(&s.ObjectMeta, key, value)
	return s
}

// Annotation sets an annotation on the StatefulSet's own metadata (not on the
// pod template; use PodTemplate for that).
func (s *StatefulSetWrapper) Annotation(key, value string) *StatefulSetWrapper {
	setAnnotation(&s.ObjectMeta, key, value)
	return s
}

// OwnerReference appends an owner reference to the StatefulSet.
func (s *StatefulSetWrapper) OwnerReference(ref metav1.OwnerReference) *StatefulSetWrapper {
	s.OwnerReferences = append(s.OwnerReferences, ref)
	return s
}

// Replicas sets spec.replicas.
func (s *StatefulSetWrapper) Replicas(n int32) *StatefulSetWrapper {
	s.Spec.Replicas = &n
	return s
}

// Parallel sets spec.podManagementPolicy to Parallel.
func (s *StatefulSetWrapper) Parallel() *StatefulSetWrapper {
	s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	return s
}

// OrderedReady sets spec.podManagementPolicy to OrderedReady explicitly.
func (s *StatefulSetWrapper) OrderedReady() *StatefulSetWrapper {
	s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	return s
}

// Partition sets the RollingUpdate update strategy with the given partition,
// keeping any other rollingUpdate parameters already set.
func (s *StatefulSetWrapper) Partition(n int32) *StatefulSetWrapper {
	s.Spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
	if s.Spec.UpdateStrategy.RollingUpdate == nil {
		s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
	}
	s.Spec.UpdateStrategy.RollingUpdate.Partition = &n
	return s
}

// PodTemplate runs fn against the pod template, so every PodWrapper option
// applies to it. Changing the template's app label does not change the
// selector.
func (s *StatefulSetWrapper) PodTemplate(fn func(*PodWrapper)) *StatefulSetWrapper {
	mutatePodTemplate(&s.Spec.Template, fn)
	return s
}

// Request is shorthand for PodTemplate(func(p) { p.Request(resourceName, quantity) }).
func (s *StatefulSetWrapper) Request(resourceName corev1.ResourceName, quantity string) *StatefulSetWrapper {
	return s.PodTemplate(func(p *PodWrapper) { p.Request(resourceName, quantity) })
}

// SchedulingGroup is shorthand for
// PodTemplate(func(p) { p.SchedulingGroup(podGroupName) }).
func (s *StatefulSetWrapper) SchedulingGroup(podGroupName string) *StatefulSetWrapper {
	return s.PodTemplate(func(p *PodWrapper) { p.SchedulingGroup(podGroupName) })
}

// VolumeClaimTemplate adds a volumeClaimTemplate named name (the controller
// makes PVC <name>-<set>-<ordinal> per pod) asking for size, ReadWriteOnce,
// and mounts it at /<name> in every container of the pod template. Its
// storageClassName is "" on purpose: only a statically provisioned
// PersistentVolume binds it, never a cluster's default StorageClass, so a
// cluster without a provisioner (the harness's) and one with a default
// provisioner (kind's local-path) behave alike.
func (s *StatefulSetWrapper) VolumeClaimTemplate(name, size string) *StatefulSetWrapper {
	s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: ptr.To(""),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	})
	for i := range s.Spec.Template.Spec.Containers {
		c := &s.Spec.Template.Spec.Containers[i]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: "/" + name})
	}
	return s
}
