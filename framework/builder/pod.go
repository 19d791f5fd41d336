package builder

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// DefaultContainerName is the name of the single container a builder puts
// in a Pod or pod template.
const DefaultContainerName = "c"

// The image of that container and its pull policy. Variables, not constants:
// the suite's --pod-image and --pod-image-pull-policy set them (framework
// Config.Resolve) where pods really run, e.g. on kind, whose nodes have only
// the images preloaded into them. An empty pull policy is the API's default.
var (
	DefaultImage           = "registry.k8s.io/pause:3.10"
	DefaultImagePullPolicy corev1.PullPolicy
)

// defaultPodSpec is the spec shared by Pod and the Deployment and StatefulSet
// pod templates: one pause container, restartPolicy Always and a zero
// termination grace period so that test cleanup is fast.
func defaultPodSpec() corev1.PodSpec {
	return corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:            DefaultContainerName,
			Image:           DefaultImage,
			ImagePullPolicy: DefaultImagePullPolicy,
		}},
		RestartPolicy:                 corev1.RestartPolicyAlways,
		TerminationGracePeriodSeconds: ptr.To[int64](0),
	}
}

// PodWrapper builds a core/v1 Pod. It is also the type handed to the
// PodTemplate callbacks of DeploymentWrapper and StatefulSetWrapper, where it
// wraps the template's metadata and spec.
type PodWrapper struct {
	corev1.Pod
}

// Pod returns a wrapper for a Pod named name in namespace ns with one container
// "c" running registry.k8s.io/pause:3.10, restartPolicy Always and
// terminationGracePeriodSeconds 0.
func Pod(name, ns string) *PodWrapper {
	return &PodWrapper{Pod: corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       defaultPodSpec(),
	}}
}

// Obj returns a deep copy of the built Pod.
func (p *PodWrapper) Obj() *corev1.Pod {
	return p.Pod.DeepCopy()
}

// Label sets a label on the Pod.
func (p *PodWrapper) Label(key, value string) *PodWrapper {
	setLabel(&p.ObjectMeta, key, value)
	return p
}

// Annotation sets an annotation on the Pod.
func (p *PodWrapper) Annotation(key, value string) *PodWrapper {
	setAnnotation(&p.ObjectMeta, key, value)
	return p
}

// OwnerReference appends an owner reference to the Pod.
func (p *PodWrapper) OwnerReference(ref metav1.OwnerReference) *PodWrapper {
	p.OwnerReferences = append(p.OwnerReferences, ref)
	return p
}

// Request sets both the request and the limit of resourceName to quantity on
// the first container. quantity is parsed with resource.MustParse, so an
// invalid quantity panics.
func (p *PodWrapper) Request(resourceName corev1.ResourceName, quantity string) *PodWrapper {
	q := resource.MustParse(quantity)
	c := p.firstContainer()
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Requests[resourceName] = q
	c.Resources.Limits[resourceName] = q.DeepCopy()
	return p
}

// SchedulingGroup sets spec.schedulingGroup.podGroupName, linking the Pod to a
// PodGroup. The PodGroup need not exist yet.
func (p *PodWrapper) SchedulingGroup(podGroupName string) *PodWrapper {
	p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &podGroupName}
	return p
}

// NodeSelector sets key=value in spec.nodeSelector.
func (p *PodWrapper) NodeSelector(key, value string) *PodWrapper {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	p.Spec.NodeSelector[key] = value
	return p
}

// PriorityClass sets spec.priorityClassName.
func (p *PodWrapper) PriorityClass(name string) *PodWrapper {
	p.Spec.PriorityClassName = name
	return p
}

// Toleration appends a toleration to spec.tolerations.
func (p *PodWrapper) Toleration(t corev1.Toleration) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, t)
	return p
}

// ResourceClaim appends a PodResourceClaim named name to spec.resourceClaims
// and a claim reference with the same name to the first container's
// resources.claims. claimName sets resourceClaimName and templateName sets
// resourceClaimTemplateName; an empty string leaves that field unset. The API
// requires exactly one of the two, and a Pod claim matches a PodGroup claim
// only when name, claimName and templateName are all equal.
func (p *PodWrapper) ResourceClaim(name, claimName, templateName string) *PodWrapper {
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{
		Name:                      name,
		ResourceClaimName:         stringPtrOrNil(claimName),
		ResourceClaimTemplateName: stringPtrOrNil(templateName),
	})
	c := p.firstContainer()
	c.Resources.Claims = append(c.Resources.Claims, corev1.ResourceClaim{Name: name})
	return p
}

// firstContainer returns the first container, panicking with a clear message if
// the spec has none (only possible when a caller removed it by hand).
func (p *PodWrapper) firstContainer() *corev1.Container {
	if len(p.Spec.Containers) == 0 {
		panic("builder: pod " + p.Name + " has no containers")
	}
	return &p.Spec.Containers[0]
}

// mutatePodTemplate runs fn against a PodWrapper holding the template's
// metadata and spec and writes the result back. It is the single mechanism
// Deployment and StatefulSet builders use for pod template options.
func mutatePodTemplate(t *corev1.PodTemplateSpec, fn func(*PodWrapper)) {
	p := &PodWrapper{Pod: corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}}
	fn(p)
	t.ObjectMeta = p.ObjectMeta
	t.Spec = p.Spec
}

// RevisionAnnotation marks a pod template with a revision of the spec's
// own: changing it changes the template's hash, so a Deployment or
// StatefulSet rolls out a new revision and nothing else about its pods.
const RevisionAnnotation = "was-harness.io/revision"

// SetRevision makes t revision rev (see RevisionAnnotation).
func SetRevision(t *corev1.PodTemplateSpec, rev string) {
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[RevisionAnnotation] = rev
}
