package admission

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/intent"
	"github.com/workload-aware/apps-harness/controllers/statefulset"
)

// StatefulSet validation (KEP-6277 spec.scheduling, carried by the
// intent.StatefulSetAnnotation annotation), in the KEP's three layers:
//
//  1. DV of the building blocks, plus the markers of the embedding field:
//     +k8s:ifDisabled(WorkloadWithStatefulSet)=+k8s:forbidden and
//     +k8s:immutable on the WHOLE spec.scheduling, +k8s:maxItems=4 and
//     +listMapKey=name on resourceClaims.
//  2. Hand-written StatefulSet rules: gang requires podManagementPolicy
//     Parallel; a user-set gang.minCount is forbidden (Alpha: derived from
//     spec.replicas); rollingUpdate.partition > 0 is forbidden while
//     spec.scheduling is set; and a warning, not an error, for each
//     spec.scheduling.resourceClaims entry the pod template does not match.
//  3. workloadbuilder semantic validation (allow-lists, basic + all) on the
//     tree the controller compiles (statefulset.WorkloadItem), in the same
//     builder.Validate call as the building-block DV of layer 1.
//
// Rule order mirrors the generated code for the field (every short-circuit
// validator of spec.scheduling runs, then "if earlyReturn, do not proceed"):
//
//   - a malformed annotation stops everything;
//   - create with the gate off: only the gate error;
//   - update that adds, removes or changes spec.scheduling: only the gate
//     error (gate off and spec.scheduling set) and one "field is immutable"
//     error at spec.scheduling; nothing inside it is validated;
//   - otherwise (a create with the gate on, or an update with an unchanged
//     spec.scheduling, whatever the gate: ratcheting) every rule runs and
//     every violation is reported; the builder gets the old tree on update.
//
// Warnings are returned only when there is no error, like the apiserver,
// which calls WarningsOnCreate/WarningsOnUpdate only after validation passed;
// on update only when spec changed (when the apiserver bumps generation, the
// condition its StatefulSet strategy uses for its pod-template warnings).

// statefulSetFeatureGate guards spec.scheduling on StatefulSets
// (controllers/features.WorkloadWithStatefulSet; the caller passes its state).
const statefulSetFeatureGate = "WorkloadWithStatefulSet"

// The two messages KEP-6277 gives verbatim (Admission Validation).
const (
	gangRequiresParallelDetail = "gang scheduling requires podManagementPolicy: Parallel; OrderedReady creates pods sequentially, which can never satisfy a gang"
	partitionDetail            = "partitioned rollouts are not supported for StatefulSets with spec.scheduling set"
)

var (
	stsAnnotationPath = intentAnnotationPath(intent.StatefulSetAnnotation)
	stsGangPath       = statefulset.SchedulingPath.Child("schedulingPolicy", "gang")
	stsMinCountPath   = stsGangPath.Child("minCount")
	stsClaimsPath     = statefulset.SchedulingPath.Child("resourceClaims")
	partitionPath     = field.NewPath("spec", "updateStrategy", "rollingUpdate", "partition")
)

// ValidateStatefulSetCreate validates the scheduling intent of a StatefulSet
// being created and returns the errors and the warnings (see S-V8). gateEnabled
// is the state of the WorkloadWithStatefulSet feature gate. StatefulSets
// without the intent are never rejected nor warned about.
func ValidateStatefulSetCreate(set *appsv1.StatefulSet, gateEnabled bool) (field.ErrorList, []string) {
	if set == nil {
		return nil, nil
	}
	cfg, errs := parseStatefulSet(set)
	if errs != nil || cfg == nil {
		return errs, nil
	}
	if !gateEnabled {
		return field.ErrorList{statefulSetGateForbidden()}, nil
	}
	if errs := validateStatefulSetConfig(set, cfg, nil, nil); len(errs) > 0 {
		return errs, nil
	}
	return nil, claimWarnings(set, cfg)
}

// ValidateStatefulSetUpdate validates the scheduling intent of a StatefulSet
// being updated from oldSet to newSet and returns the errors and the warnings.
// gateEnabled is the state of the WorkloadWithStatefulSet feature gate. A nil
// oldSet is validated as a create.
//
// The whole spec.scheduling is immutable (+k8s:immutable): adding, removing or
// changing it in any way is one Invalid "field is immutable" error at
// spec.scheduling, whatever the gate says. An unchanged spec.scheduling is
// allowed with the gate off (ratcheting), but the other rules still apply.
//
// A stored annotation that does not parse was never a valid spec.scheduling;
// it is treated as absent on the old object, so removing it is accepted and
// replacing it with a valid value is rejected as adding spec.scheduling.
func ValidateStatefulSetUpdate(newSet, oldSet *appsv1.StatefulSet, gateEnabled bool) (field.ErrorList, []string) {
	if newSet == nil {
		return nil, nil
	}
	if oldSet == nil {
		return ValidateStatefulSetCreate(newSet, gateEnabled)
	}
	newCfg, errs := parseStatefulSet(newSet)
	if errs != nil {
		return errs, nil
	}
	oldCfg, _ := intent.FromAnnotation(oldSet.Annotations, intent.StatefulSetAnnotation) // malformed: absent, see above
	if newCfg == nil && oldCfg == nil {
		return nil, nil
	}

	if !equality.Semantic.DeepEqual(newCfg, oldCfg) {
		var errs field.ErrorList
		if !gateEnabled && newCfg != nil {
			errs = append(errs, statefulSetGateForbidden())
		}
		return append(errs, validateImmutable(statefulset.SchedulingPath, newCfg, oldCfg)...), nil
	}

	if errs := validateStatefulSetConfig(newSet, newCfg, oldSet, oldCfg); len(errs) > 0 {
		return errs, nil
	}
	if equality.Semantic.DeepEqual(newSet.Spec, oldSet.Spec) {
		return nil, nil // no generation bump: nothing new to warn about
	}
	return nil, claimWarnings(newSet, newCfg)
}

// parseStatefulSet reads the StatefulSet's intent; a malformed annotation is
// one Invalid error at the annotation, quoting the parse error.
func parseStatefulSet(set *appsv1.StatefulSet) (*intent.StatefulSetSchedulingConfiguration, field.ErrorList) {
	return parseIntent(set.Annotations, intent.StatefulSetAnnotation, "StatefulSetSchedulingConfiguration")
}

func statefulSetGateForbidden() *field.Error {
	return gateForbiddenFor(statefulset.SchedulingPath, statefulSetFeatureGate, intent.StatefulSetAnnotation)
}

// validateStatefulSetConfig runs the create-and-update rules on a present
// intent. oldSet and oldCfg are nil for a create.
func validateStatefulSetConfig(set *appsv1.StatefulSet, cfg *intent.StatefulSetSchedulingConfiguration, oldSet *appsv1.StatefulSet, oldCfg *intent.StatefulSetSchedulingConfiguration) field.ErrorList {
	var allErrs field.ErrorList

	// Layer 1: the list markers DV gives in-tree and the builder cannot.
	allErrs = append(allErrs, validateClaimsList(stsClaimsPath, cfg.ResourceClaims)...)

	// Layers 1 and 3: building-block DV, allow-lists, basic + all. A user-set
	// minCount is rejected outright below, so the builder validates the
	// configuration the controller would compile without it (no second
	// error at gang.minCount, e.g. for minCount: 0).
	allErrs = append(allErrs, validateWithBuilder(statefulset.SchedulingPath, statefulset.BuildOptions(), func() (item, old *workloadbuilder.WorkloadItem) {
		item = statefulset.WorkloadItem(set, withoutMinCount(cfg), statefulset.SchedulingPath)
		if oldSet != nil && oldCfg != nil {
			old = statefulset.WorkloadItem(oldSet, withoutMinCount(oldCfg), nil)
		}
		return item, old
	})...)

	// Layer 2: hand-written StatefulSet rules.
	if cfg.IsGang() && set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		// Unset is OrderedReady, the default; podManagementPolicy is
		// immutable, so this is decided at creation.
		allErrs = append(allErrs, field.Forbidden(stsGangPath, gangRequiresParallelDetail))
	}
	if cfg.ExplicitMinCount() != nil {
		allErrs = append(allErrs, field.Forbidden(stsMinCountPath,
			"must not be set: in Alpha the controller derives the gang minCount from spec.replicas; omit minCount (gang: {})"))
	}
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ptr.Deref(ru.Partition, 0) > 0 {
		allErrs = append(allErrs, field.Forbidden(partitionPath, partitionDetail))
	}
	return allErrs
}

// withoutMinCount returns cfg, or a copy without the user's gang.minCount.
func withoutMinCount(cfg *intent.StatefulSetSchedulingConfiguration) *intent.StatefulSetSchedulingConfiguration {
	if cfg.ExplicitMinCount() == nil {
		return cfg
	}
	c := *cfg
	c.SchedulingPolicy = cfg.SchedulingPolicy.DeepCopy()
	c.SchedulingPolicy.Gang.MinCount = nil
	return &c
}

// claimWarnings warns, for each spec.scheduling.resourceClaims entry, when
// spec.template.spec.resourceClaims has no entry with the same name and the
// same resourceClaimName and resourceClaimTemplateName: such pods do not use
// the PodGroup's shared claim.
func claimWarnings(set *appsv1.StatefulSet, cfg *intent.StatefulSetSchedulingConfiguration) []string {
	podClaims := set.Spec.Template.Spec.ResourceClaims
	var warnings []string
	for i, c := range cfg.ResourceClaims {
		sameName := -1
		matched := false
		for j, pc := range podClaims {
			if pc.Name != c.Name {
				continue
			}
			if sameName < 0 {
				sameName = j
			}
			if podClaimMatches(pc, c.ResourceClaimName, c.ResourceClaimTemplateName) {
				matched = true
				break
			}
		}
		if matched {
			continue
		}
		w := fmt.Sprintf("%s: pod template has no matching spec.resourceClaims entry %q; pods will not use the PodGroup's shared claim",
			stsClaimsPath.Index(i), c.Name)
		if sameName >= 0 {
			w += fmt.Sprintf(" (spec.template.spec.resourceClaims[%d] has that name but refers to a different ResourceClaim or ResourceClaimTemplate)", sameName)
		}
		warnings = append(warnings, w)
	}
	return warnings
}

func podClaimMatches(pc corev1.PodResourceClaim, claimName, templateName *string) bool {
	return ptr.Equal(pc.ResourceClaimName, claimName) && ptr.Equal(pc.ResourceClaimTemplateName, templateName)
}
