package builder

import (
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The helpers below act on the fields PodGroupTemplate and PodGroupSpec share,
// so both wrappers set them the same way.

func basicPolicy() schedulingv1beta1.PodGroupSchedulingPolicy {
	return schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}
}

func gangPolicy(minCount int32) schedulingv1beta1.PodGroupSchedulingPolicy {
	return schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}}
}

func appendTopology(c **schedulingv1beta1.PodGroupSchedulingConstraints, key string) {
	if *c == nil {
		*c = &schedulingv1beta1.PodGroupSchedulingConstraints{}
	}
	(*c).Topology = append((*c).Topology, schedulingv1beta1.TopologyConstraint{Key: key})
}

func disruptionAll() *schedulingv1beta1.DisruptionMode {
	return &schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}}
}

func disruptionSingle() *schedulingv1beta1.DisruptionMode {
	return &schedulingv1beta1.DisruptionMode{Single: &schedulingv1beta1.SingleDisruptionMode{}}
}

func podGroupClaim(name, claimName, templateName string) schedulingv1beta1.PodGroupResourceClaim {
	return schedulingv1beta1.PodGroupResourceClaim{
		Name:                      name,
		ResourceClaimName:         stringPtrOrNil(claimName),
		ResourceClaimTemplateName: stringPtrOrNil(templateName),
	}
}

// WorkloadWrapper builds a scheduling.k8s.io/v1beta1 Workload.
type WorkloadWrapper struct {
	schedulingv1beta1.Workload
}

// Workload returns a wrapper for a Workload named name in namespace ns with an
// empty spec. Add templates with PodGroupTemplate; the API requires at least
// one (and at most 8).
func Workload(name, ns string) *WorkloadWrapper {
	return &WorkloadWrapper{Workload: schedulingv1beta1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
	}}
}

// Obj returns a deep copy of the built Workload.
func (w *WorkloadWrapper) Obj() *schedulingv1beta1.Workload {
	return w.Workload.DeepCopy()
}

// Label sets a label on the Workload.
func (w *WorkloadWrapper) Label(key, value string) *WorkloadWrapper {
	setLabel(&w.ObjectMeta, key, value)
	return w
}

// Annotation sets an annotation on the Workload.
func (w *WorkloadWrapper) Annotation(key, value string) *WorkloadWrapper {
	setAnnotation(&w.ObjectMeta, key, value)
	return w
}

// OwnerReference appends an owner reference to the Workload.
func (w *WorkloadWrapper) OwnerReference(ref metav1.OwnerReference) *WorkloadWrapper {
	w.OwnerReferences = append(w.OwnerReferences, ref)
	return w
}

// ControllerRef sets spec.controllerRef (immutable in the API). An empty
// apiGroup means the core group; the Job controller uses ("batch", "Job", name).
func (w *WorkloadWrapper) ControllerRef(apiGroup, kind, name string) *WorkloadWrapper {
	w.Spec.ControllerRef = &schedulingv1beta1.TypedLocalObjectReference{
		APIGroup: apiGroup,
		Kind:     kind,
		Name:     name,
	}
	return w
}

// PodGroupTemplate appends a copy of t's template to spec.podGroupTemplates.
// Later changes to t do not affect this Workload.
func (w *WorkloadWrapper) PodGroupTemplate(t *PodGroupTemplateWrapper) *WorkloadWrapper {
	w.Spec.PodGroupTemplates = append(w.Spec.PodGroupTemplates, t.Obj())
	return w
}

// PodGroupTemplateWrapper builds a schedulingv1beta1.PodGroupTemplate, the
// element of Workload spec.podGroupTemplates.
type PodGroupTemplateWrapper struct {
	schedulingv1beta1.PodGroupTemplate
}

// PodGroupTemplate returns a wrapper for a template named name (a DNS label)
// with the basic scheduling policy.
func PodGroupTemplate(name string) *PodGroupTemplateWrapper {
	return &PodGroupTemplateWrapper{PodGroupTemplate: schedulingv1beta1.PodGroupTemplate{
		Name:             name,
		SchedulingPolicy: basicPolicy(),
	}}
}

// Obj returns a deep copy of the built template, by value.
func (t *PodGroupTemplateWrapper) Obj() schedulingv1beta1.PodGroupTemplate {
	return *t.PodGroupTemplate.DeepCopy()
}

// Basic sets the basic scheduling policy, replacing any gang policy.
func (t *PodGroupTemplateWrapper) Basic() *PodGroupTemplateWrapper {
	t.SchedulingPolicy = basicPolicy()
	return t
}

// Gang sets the gang scheduling policy with minCount, replacing any basic
// policy. The API requires minCount >= 1.
func (t *PodGroupTemplateWrapper) Gang(minCount int32) *PodGroupTemplateWrapper {
	t.SchedulingPolicy = gangPolicy(minCount)
	return t
}

// Topology appends a topology constraint on node label key to
// schedulingConstraints.topology. The API accepts at most one and needs the
// TopologyAwareWorkloadScheduling feature gate.
func (t *PodGroupTemplateWrapper) Topology(key string) *PodGroupTemplateWrapper {
	appendTopology(&t.SchedulingConstraints, key)
	return t
}

// DisruptionAll sets disruptionMode to all.
func (t *PodGroupTemplateWrapper) DisruptionAll() *PodGroupTemplateWrapper {
	t.DisruptionMode = disruptionAll()
	return t
}

// DisruptionSingle sets disruptionMode to single.
func (t *PodGroupTemplateWrapper) DisruptionSingle() *PodGroupTemplateWrapper {
	t.DisruptionMode = disruptionSingle()
	return t
}

// ResourceClaim appends a PodGroupResourceClaim named name; claimName sets
// resourceClaimName and templateName sets resourceClaimTemplateName, and an
// empty string leaves that field unset. The API requires exactly one of the
// two, allows at most 4 claims and needs the DRAWorkloadResourceClaims gate.
func (t *PodGroupTemplateWrapper) ResourceClaim(name, claimName, templateName string) *PodGroupTemplateWrapper {
	t.ResourceClaims = append(t.ResourceClaims, podGroupClaim(name, claimName, templateName))
	return t
}

// PriorityClass sets priorityClassName.
func (t *PodGroupTemplateWrapper) PriorityClass(name string) *PodGroupTemplateWrapper {
	t.PriorityClassName = name
	return t
}

// PodGroupWrapper builds a scheduling.k8s.io/v1beta1 PodGroup.
type PodGroupWrapper struct {
	schedulingv1beta1.PodGroup
}

// PodGroup returns a wrapper for a PodGroup named name in namespace ns with the
// basic scheduling policy and no workloadRef (a standalone PodGroup).
func PodGroup(name, ns string) *PodGroupWrapper {
	return &PodGroupWrapper{PodGroup: schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       schedulingv1beta1.PodGroupSpec{SchedulingPolicy: basicPolicy()},
	}}
}

// A PodGroup stamped from a Workload's template is made with the upstream
// k8s.io/component-helpers workloadbuilder (NewBuilderFromExistingWorkload(w,
// opts).NewPodGroup), exactly as workload controllers do; WrapPodGroup lets a
// spec adjust its result fluently.

// WrapPodGroup wraps an existing PodGroup (for example one built by
// workloadbuilder) so the options below apply to a copy of it.
func WrapPodGroup(pg *schedulingv1beta1.PodGroup) *PodGroupWrapper {
	return &PodGroupWrapper{PodGroup: *pg.DeepCopy()}
}

// Obj returns a deep copy of the built PodGroup.
func (g *PodGroupWrapper) Obj() *schedulingv1beta1.PodGroup {
	return g.PodGroup.DeepCopy()
}

// Label sets a label on the PodGroup.
func (g *PodGroupWrapper) Label(key, value string) *PodGroupWrapper {
	setLabel(&g.ObjectMeta, key, value)
	return g
}

// Annotation sets an annotation on the PodGroup.
func (g *PodGroupWrapper) Annotation(key, value string) *PodGroupWrapper {
	setAnnotation(&g.ObjectMeta, key, value)
	return g
}

// OwnerReference appends an owner reference to the PodGroup.
func (g *PodGroupWrapper) OwnerReference(ref metav1.OwnerReference) *PodGroupWrapper {
	g.OwnerReferences = append(g.OwnerReferences, ref)
	return g
}

// WorkloadRef sets spec.workloadRef to template templateName of Workload
// workloadName (immutable in the API).
func (g *PodGroupWrapper) WorkloadRef(workloadName, templateName string) *PodGroupWrapper {
	g.Spec.WorkloadRef = &schedulingv1beta1.WorkloadReference{
		WorkloadName: workloadName,
		TemplateName: templateName,
	}
	return g
}

// Basic sets the basic scheduling policy, replacing any gang policy.
func (g *PodGroupWrapper) Basic() *PodGroupWrapper {
	g.Spec.SchedulingPolicy = basicPolicy()
	return g
}

// Gang sets the gang scheduling policy with minCount, replacing any basic
// policy. The API requires minCount >= 1.
func (g *PodGroupWrapper) Gang(minCount int32) *PodGroupWrapper {
	g.Spec.SchedulingPolicy = gangPolicy(minCount)
	return g
}

// Topology appends a topology constraint on node label key to
// spec.schedulingConstraints.topology. The API accepts at most one and needs
// the TopologyAwareWorkloadScheduling feature gate.
func (g *PodGroupWrapper) Topology(key string) *PodGroupWrapper {
	appendTopology(&g.Spec.SchedulingConstraints, key)
	return g
}

// DisruptionAll sets spec.disruptionMode to all.
func (g *PodGroupWrapper) DisruptionAll() *PodGroupWrapper {
	g.Spec.DisruptionMode = disruptionAll()
	return g
}

// DisruptionSingle sets spec.disruptionMode to single (the server default).
func (g *PodGroupWrapper) DisruptionSingle() *PodGroupWrapper {
	g.Spec.DisruptionMode = disruptionSingle()
	return g
}

// ResourceClaim appends a PodGroupResourceClaim named name to
// spec.resourceClaims; see PodGroupTemplateWrapper.ResourceClaim.
func (g *PodGroupWrapper) ResourceClaim(name, claimName, templateName string) *PodGroupWrapper {
	g.Spec.ResourceClaims = append(g.Spec.ResourceClaims, podGroupClaim(name, claimName, templateName))
	return g
}

// PriorityClass sets spec.priorityClassName.
func (g *PodGroupWrapper) PriorityClass(name string) *PodGroupWrapper {
	g.Spec.PriorityClassName = name
	return g
}
