package statefulset

import (
	"fmt"
	"hash/fnv"

	appsv1 "k8s.io/api/apps/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder"
	jobutil "k8s.io/kubernetes/pkg/api/job"
	hashutil "k8s.io/kubernetes/pkg/util/hash"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/intent"
)

// Well-known keys. The managed-by annotation marks objects the StatefulSet
// controller created (the KEP's "scheduling.k8s.io/managed-by"; 1.37 defines
// no constant). The downward-mapping annotations are KEP-6089's, defined in
// 1.37 only inside k8s.io/kubernetes/pkg/apis/scheduling, so they are spelled
// out here.
const (
	ManagedByAnnotation               = "scheduling.k8s.io/managed-by"
	ManagedByValue                    = "statefulset-controller"
	GroupTemplateNameAnnotation       = "scheduling.k8s.io/group-template-name"
	ParentCompositePodGroupAnnotation = "scheduling.k8s.io/parent-compositepodgroup"
	PodGroupProtectionFinalizer       = "scheduling.k8s.io/podgroup-protection"
)

// SchedulingPath is where the intent lives in the KEP's API.
var SchedulingPath = field.NewPath("spec", "scheduling")

// BuildOptions allow basic and gang, single and all (basic+all is rejected by
// the builder's own cross-field rule).
func BuildOptions() workloadbuilder.BuildOptions {
	return workloadbuilder.BuildOptions{
		AllowedPolicies:        []workloadbuilder.SchedulingPolicyOption{workloadbuilder.BasicPolicy, workloadbuilder.GangPolicy},
		AllowedDisruptionModes: []workloadbuilder.DisruptionModeOption{workloadbuilder.SingleMode, workloadbuilder.AllMode},
	}
}

func shortHash(parts ...string) string {
	h := fnv.New32a()
	for _, p := range parts {
		hashutil.DeepHashObject(h, p)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// WorkloadName is <statefulset>-<hash of its UID>: for people only; the
// controller finds its Workload by spec.controllerRef, never by name.
func WorkloadName(set *appsv1.StatefulSet) string {
	hash := shortHash(string(set.UID))
	return truncate(set.Name, validation.DNS1123SubdomainMaxLength-len(hash)-1) + "-" + hash
}

// TemplateName names the sole PodGroupTemplate: the StatefulSet's name as a
// DNS label (at most 63 characters), as in the KEP's example.
func TemplateName(set *appsv1.StatefulSet) string {
	name := truncate(set.Name, validation.DNS1123LabelMaxLength)
	// A StatefulSet name is itself a DNS label in practice (its pods' hostnames),
	// but trim what a label cannot end with after truncation.
	for len(name) > 0 && (name[len(name)-1] == '-' || name[len(name)-1] == '.') {
		name = name[:len(name)-1]
	}
	return name
}

// PodGroupName is <workload>-<template>-<hash>, truncated fairly to fit.
func PodGroupName(workloadName, templateName string) string {
	return podGroupName(workloadName, templateName, shortHash(workloadName, templateName))
}

// DelegatedPodGroupName names the PodGroup a StatefulSet stamps from a
// parent's template: siblings share the template, so the StatefulSet's UID
// joins the hash (as the 1.38 Job controller's GeneratePodGroupName does).
func DelegatedPodGroupName(workloadName, templateName string, owner types.UID) string {
	return podGroupName(workloadName, templateName, shortHash(workloadName, templateName, string(owner)))
}

// podGroupName joins workload, template and hash, shortening the longer of
// the first two until the name fits a DNS subdomain.
func podGroupName(workloadName, templateName, hash string) string {
	room := validation.DNS1123SubdomainMaxLength - len(hash) - 2
	w, t := workloadName, templateName
	for len(w)+len(t) > room {
		if len(w) >= len(t) {
			w = w[:len(w)-1]
		} else {
			t = t[:len(t)-1]
		}
	}
	return w + "-" + t + "-" + hash
}

// ResolvedMinCount is replicas clamped to 1 (Alpha: never user-set).
func ResolvedMinCount(replicas *int32) int32 {
	return max(1, ptr.Deref(replicas, 1))
}

// WorkloadItem is the single-leaf tree of a StatefulSet, shared by the
// controller and admission.
func WorkloadItem(set *appsv1.StatefulSet, cfg *intent.SchedulingConfiguration, path *field.Path) *workloadbuilder.WorkloadItem {
	if cfg == nil {
		cfg = &intent.SchedulingConfiguration{}
	}
	replicas := set.Spec.Replicas
	return &workloadbuilder.WorkloadItem{
		Name: TemplateName(set),
		Path: path,
		DefaultConfig: &workloadbuilder.SchedulingConfig{
			Policy:            &workloadbuilder.SchedulingPolicy{Basic: &workloadbuilder.BasicSchedulingPolicy{}},
			PriorityClassName: set.Spec.Template.Spec.PriorityClassName,
		},
		Input: jobutil.WorkloadInput(cfg.SchedulingPolicy, cfg.SchedulingConstraints, cfg.DisruptionMode, cfg.ResourceClaims),
		Callbacks: []workloadbuilder.SchedulingConfigFunc{func(sc *workloadbuilder.SchedulingConfig) {
			// The derived value goes into the compiled copy only, never back
			// into the StatefulSet.
			if sc != nil && sc.Policy != nil && sc.Policy.Gang != nil && sc.Policy.Gang.MinCount == nil {
				sc.Policy.Gang.MinCount = ptr.To(ResolvedMinCount(replicas))
			}
		}},
	}
}

// BuildWorkload compiles the StatefulSet's own Workload: one template, a
// controller ownerReference with blockOwnerDeletion, spec.controllerRef, and
// the managed-by annotation.
func BuildWorkload(set *appsv1.StatefulSet, cfg *intent.SchedulingConfiguration) (*schedulingv1beta1.Workload, error) {
	opts := BuildOptions()
	opts.Name, opts.Namespace = WorkloadName(set), set.Namespace
	opts.Owner = metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
	opts.DisableDeclarativeValidation = true
	w, err := workloadbuilder.NewBuilder(WorkloadItem(set, cfg, SchedulingPath), opts).BuildWorkload()
	if err != nil {
		return nil, err
	}
	w.Annotations = map[string]string{ManagedByAnnotation: ManagedByValue}
	return w, nil
}

// BuildPodGroup stamps a PodGroup from template of w for set: a controller
// ownerReference to the StatefulSet, a second one to the Workload only when
// ownWorkload (the StatefulSet-managed case), the protection finalizer and
// the managed-by annotation.
func BuildPodGroup(set *appsv1.StatefulSet, w *schedulingv1beta1.Workload, template string, ownWorkload, withClaims bool) (*schedulingv1beta1.PodGroup, error) {
	opts := BuildOptions()
	opts.Owner = metav1.NewControllerRef(set, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
	// workloadbuilder v0.37.2 indexes only top-level templates; a template
	// nested in a composite tree is lifted to the top of a copy so the
	// upstream stamping still does the work.
	source := w
	if t := FindPodGroupTemplate(w, template); t != nil && len(w.Spec.CompositePodGroupTemplates) > 0 {
		source = w.DeepCopy()
		source.Spec.PodGroupTemplates = []schedulingv1beta1.PodGroupTemplate{*t.DeepCopy()}
		source.Spec.CompositePodGroupTemplates = nil
	}
	name := PodGroupName(w.Name, template)
	if !ownWorkload && !metav1.IsControlledBy(w, set) {
		name = DelegatedPodGroupName(w.Name, template, set.UID)
	}
	pg, err := workloadbuilder.NewBuilderFromExistingWorkload(source, opts).NewPodGroup(name, template)
	if err != nil {
		return nil, err
	}
	pg.Namespace = set.Namespace
	if ownWorkload {
		pg.OwnerReferences = append(pg.OwnerReferences, metav1.OwnerReference{
			APIVersion:         schedulingv1beta1.SchemeGroupVersion.String(),
			Kind:               "Workload",
			Name:               w.Name,
			UID:                w.UID,
			BlockOwnerDeletion: ptr.To(true),
		})
	}
	pg.Annotations = map[string]string{ManagedByAnnotation: ManagedByValue}
	pg.Finalizers = []string{PodGroupProtectionFinalizer}
	if !withClaims {
		pg.Spec.ResourceClaims = nil
	}
	return pg, nil
}

// FindPodGroupTemplate finds the PodGroupTemplate named name anywhere in w:
// at the top level, or as a leaf of a compositePodGroupTemplates tree (where
// a parent controller's templates live).
func FindPodGroupTemplate(w *schedulingv1beta1.Workload, name string) *schedulingv1beta1.PodGroupTemplate {
	for i := range w.Spec.PodGroupTemplates {
		if w.Spec.PodGroupTemplates[i].Name == name {
			return &w.Spec.PodGroupTemplates[i]
		}
	}
	return findInComposites(w.Spec.CompositePodGroupTemplates, name)
}

func findInComposites(cs []schedulingv1beta1.CompositePodGroupTemplate, name string) *schedulingv1beta1.PodGroupTemplate {
	for i := range cs {
		for j := range cs[i].PodGroupTemplates {
			if cs[i].PodGroupTemplates[j].Name == name {
				return &cs[i].PodGroupTemplates[j]
			}
		}
		if t := findInComposites(cs[i].CompositePodGroupTemplates, name); t != nil {
			return t
		}
	}
	return nil
}

// templateMinCount returns the gang minCount of the named template, or nil.
func templateMinCount(w *schedulingv1beta1.Workload, template string) *int32 {
	if t := FindPodGroupTemplate(w, template); t != nil && t.SchedulingPolicy.Gang != nil {
		return ptr.To(t.SchedulingPolicy.Gang.MinCount)
	}
	return nil
}
