// Package admission validates a Deployment's Workload-Aware Scheduling intent
// (KEP-6276 spec.scheduling, carried by the intent.DeploymentAnnotation
// annotation) and a StatefulSet's (KEP-6277, intent.StatefulSetAnnotation; see
// ValidateStatefulSetCreate) the way the apiserver would validate the native
// field, and serves that validation as a validating admission webhook.
// Helpers both kinds share (annotation parsing, the gate, the claims list,
// the workloadbuilder layer, immutability) live in common.go.
//
// For Deployments, the validation runs in the KEP's three layers:
//
//  1. Declarative validation (DV) of the scheduling.k8s.io/v1alpha3 building
//     blocks, plus the markers of the embedding field DV would apply in-tree:
//     +k8s:ifDisabled(WorkloadWithDeployment)=+k8s:forbidden,
//     +k8s:update=NoSet/NoUnset on spec.scheduling and on schedulingPolicy,
//     +k8s:immutable on schedulingConstraints, disruptionMode and
//     resourceClaims, +k8s:maxItems=4 and +listMapKey=name on resourceClaims.
//  2. Hand-written Deployment rules: gang.minCount ≤ spec.replicas, gang
//     requires the Recreate strategy, spec.scheduling and a pod template that
//     already sets spec.schedulingGroup are mutually exclusive, and the
//     basic/gang variant is frozen after creation.
//  3. workloadbuilder semantic validation on the very WorkloadItem tree the
//     controller compiles (deployment.WorkloadItem): the allow-lists and the
//     basic + all rejection. It runs in the same builder.Validate call as the
//     building-block DV of layer 1 (DisableDeclarativeValidation false),
//     because a webhook, unlike the apiserver, has no DV pass of its own.
//
// Every error is reported at the path the native field would have
// (spec.scheduling...), except a malformed annotation, which is reported at
// metadata.annotations[<annotation>] since it has no native counterpart.
// Two error shapes deliberately differ from what generated DV would emit:
// adding or removing spec.scheduling on update is Forbidden (DV: Invalid
// "field cannot be set once created" / "cleared once set"), and a duplicate
// claim name is reported at resourceClaims[i].name with the name as value
// (DV: at resourceClaims[i] with the whole item).
//
// Rule order mirrors the generated code's short-circuits: a malformed
// annotation stops everything; with the gate off, setting or changing
// spec.scheduling reports only the gate (plus NoSet when it is added on
// update); adding or removing spec.scheduling on update reports only that.
// Otherwise all rules run and every violation is reported.
//
// An explicit gang.minCount is a floor for positive replica counts only:
// replicas == 0 is always accepted, because KEP-6276 keeps the user's
// minCount on the Workload while the Deployment is scaled to zero (test plan
// D-I4, D-E7), which would be unreachable otherwise.
package admission

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/intent"
	"github.com/workload-aware/apps-harness/controllers/deployment"
)

// featureGate names the gate that guards spec.scheduling on Deployments
// (controllers/features.WorkloadWithDeployment; the caller passes its state).
const featureGate = "WorkloadWithDeployment"

var (
	annotationPath  = intentAnnotationPath(intent.DeploymentAnnotation)
	replicasPath    = field.NewPath("spec", "replicas")
	policyPath      = deployment.SchedulingPath.Child("schedulingPolicy")
	gangPath        = policyPath.Child("gang")
	minCountPath    = gangPath.Child("minCount")
	constraintsPath = deployment.SchedulingPath.Child("schedulingConstraints")
	disruptionPath  = deployment.SchedulingPath.Child("disruptionMode")
	claimsPath      = deployment.SchedulingPath.Child("resourceClaims")
)

// ValidateCreate validates the scheduling intent of a Deployment being created.
// gateEnabled is the state of the WorkloadWithDeployment feature gate.
// Deployments without the intent are never rejected.
func ValidateCreate(d *appsv1.Deployment, gateEnabled bool) field.ErrorList {
	if d == nil {
		return nil
	}
	cfg, errs := parse(d)
	if errs != nil || cfg == nil {
		return errs
	}
	if !gateEnabled {
		return field.ErrorList{gateForbidden()}
	}
	return validateConfig(d, cfg, nil, nil)
}

// ValidateUpdate validates the scheduling intent of a Deployment being updated
// from oldD to newD. gateEnabled is the state of the WorkloadWithDeployment
// feature gate. A nil oldD is validated as a create.
//
// A stored annotation that does not parse was never a valid spec.scheduling;
// it is treated as absent on the old object, so removing it is accepted and
// replacing it with a valid value is rejected as adding spec.scheduling after
// creation.
func ValidateUpdate(newD, oldD *appsv1.Deployment, gateEnabled bool) field.ErrorList {
	if newD == nil {
		return nil
	}
	if oldD == nil {
		return ValidateCreate(newD, gateEnabled)
	}
	newCfg, errs := parse(newD)
	if errs != nil {
		return errs
	}
	oldCfg, _ := intent.FromAnnotations(oldD.Annotations) // malformed: absent, see above

	switch {
	case newCfg == nil && oldCfg == nil:
		return nil
	case newCfg == nil:
		// +k8s:update=NoUnset, whatever the gate says (removing a field is
		// never forbidden by a disabled gate).
		return field.ErrorList{field.Forbidden(deployment.SchedulingPath, fmt.Sprintf(
			"spec.scheduling cannot be removed once set (annotation %s): a Deployment keeps the scheduling mode it was created with; restore the annotation, or delete and recreate the Deployment without it",
			intent.DeploymentAnnotation))}
	case oldCfg == nil:
		// +k8s:update=NoSet; a disabled gate forbids it as well.
		var errs field.ErrorList
		if !gateEnabled {
			errs = append(errs, gateForbidden())
		}
		return append(errs, field.Forbidden(deployment.SchedulingPath, fmt.Sprintf(
			"spec.scheduling cannot be added to an existing Deployment (annotation %s): it can only be set at creation; remove the annotation, or delete and recreate the Deployment with it",
			intent.DeploymentAnnotation)))
	}

	// Both set. With the gate off, an unchanged intent ratchets (it was
	// admitted before) and any change is forbidden.
	if !gateEnabled && !equality.Semantic.DeepEqual(newCfg, oldCfg) {
		return field.ErrorList{gateForbidden()}
	}

	var allErrs field.ErrorList
	allErrs = append(allErrs, validatePolicyUpdate(newCfg.SchedulingPolicy, oldCfg.SchedulingPolicy)...)
	allErrs = append(allErrs, validateImmutable(constraintsPath, newCfg.SchedulingConstraints, oldCfg.SchedulingConstraints)...)
	allErrs = append(allErrs, validateImmutable(disruptionPath, newCfg.DisruptionMode, oldCfg.DisruptionMode)...)
	allErrs = append(allErrs, validateImmutable(claimsPath, newCfg.ResourceClaims, oldCfg.ResourceClaims)...)
	allErrs = append(allErrs, validateConfig(newD, newCfg, oldD, oldCfg)...)
	return allErrs
}

// ValidateScale validates a /scale request that sets the replicas of the
// stored Deployment d to newReplicas: a positive count below the explicit
// gang.minCount is rejected at spec.replicas. Deployments without the intent
// or without an explicit minCount are never rejected, nor are Deployments
// whose stored annotation does not parse (the scale request itself is fine).
func ValidateScale(d *appsv1.Deployment, newReplicas int32) field.ErrorList {
	if d == nil {
		return nil
	}
	cfg, err := intent.FromAnnotations(d.Annotations)
	if err != nil || cfg == nil {
		return nil
	}
	if m := cfg.ExplicitMinCount(); m != nil && belowFloor(newReplicas, *m) {
		return field.ErrorList{replicasBelowFloor(newReplicas, *m)}
	}
	return nil
}

// parse reads the Deployment's intent; a malformed annotation is one Invalid
// error at the annotation, quoting the parse error.
func parse(d *appsv1.Deployment) (*intent.DeploymentSchedulingConfiguration, field.ErrorList) {
	return parseIntent(d.Annotations, intent.DeploymentAnnotation, "DeploymentSchedulingConfiguration")
}

func gateForbidden() *field.Error {
	return gateForbiddenFor(deployment.SchedulingPath, featureGate, intent.DeploymentAnnotation)
}

// validateConfig runs the create-and-update rules on a present intent. oldD
// and oldCfg are nil for a create.
func validateConfig(d *appsv1.Deployment, cfg *intent.DeploymentSchedulingConfiguration, oldD *appsv1.Deployment, oldCfg *intent.DeploymentSchedulingConfiguration) field.ErrorList {
	var allErrs field.ErrorList

	// Layer 1: what DV of the embedding field gives in-tree and the builder
	// cannot (the builder validates the building blocks, not the list).
	allErrs = append(allErrs, validateClaimsList(claimsPath, cfg.ResourceClaims)...)

	// Layers 1 and 3: building-block DV, allow-lists, basic + all.
	allErrs = append(allErrs, validateDeploymentWithBuilder(d, cfg, oldD, oldCfg)...)

	// Layer 2: hand-written cross-field rules.
	if d.Spec.Template.Spec.SchedulingGroup != nil {
		allErrs = append(allErrs, field.Forbidden(deployment.SchedulingPath,
			"cannot be set when the pod template already sets spec.template.spec.schedulingGroup: its pods already belong to a scheduling group managed by someone else; remove spec.scheduling, or remove spec.template.spec.schedulingGroup to let the Deployment manage the group"))
	}
	if cfg.IsGang() {
		if t := strategyType(d); t != appsv1.RecreateDeploymentStrategyType {
			allErrs = append(allErrs, field.Forbidden(gangPath, fmt.Sprintf(
				"gang scheduling requires spec.strategy.type %q, got %q: a rolling update would split the gang across two revisions; set spec.strategy.type to %q, or use the basic scheduling policy",
				appsv1.RecreateDeploymentStrategyType, t, appsv1.RecreateDeploymentStrategyType)))
		}
	}
	allErrs = append(allErrs, validateMinCount(d, cfg, oldD, oldCfg)...)
	return allErrs
}

// validateDeploymentWithBuilder runs the workloadbuilder layer over the
// WorkloadItem the Deployment controller compiles (deployment.WorkloadItem).
func validateDeploymentWithBuilder(d *appsv1.Deployment, cfg *intent.DeploymentSchedulingConfiguration, oldD *appsv1.Deployment, oldCfg *intent.DeploymentSchedulingConfiguration) field.ErrorList {
	return validateWithBuilder(deployment.SchedulingPath, deployment.BuildOptions(), func() (item, old *workloadbuilder.WorkloadItem) {
		item = deployment.WorkloadItem(d, cfg, deployment.SchedulingPath)
		if oldD != nil && oldCfg != nil {
			old = deployment.WorkloadItem(oldD, oldCfg, nil)
		}
		return item, old
	})
}

// validatePolicyUpdate freezes the scheduling policy variant: schedulingPolicy
// cannot be set or cleared after creation (+k8s:update=NoSet/NoUnset), and
// basic cannot become gang nor gang basic, which DV cannot express. Only
// gang.minCount may change.
func validatePolicyUpdate(newP, oldP *schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy) field.ErrorList {
	const only = "only spec.scheduling.schedulingPolicy.gang.minCount may be updated; delete and recreate the Deployment to change the scheduling policy"
	switch {
	case oldP == nil && newP != nil:
		return field.ErrorList{field.Invalid(policyPath, field.OmitValueType{},
			"field cannot be set once created (it was omitted, i.e. basic, at creation); "+only)}
	case oldP != nil && newP == nil:
		return field.ErrorList{field.Invalid(policyPath, field.OmitValueType{},
			fmt.Sprintf("field cannot be cleared once set (it was %s at creation); %s", variant(oldP), only))}
	case oldP != nil && newP != nil && variant(oldP) != variant(newP):
		return field.ErrorList{field.Invalid(policyPath, variant(newP),
			fmt.Sprintf("the basic/gang policy variant is immutable after creation (it was %s); %s", variant(oldP), only))}
	}
	return nil
}

func variant(p *schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy) string {
	switch {
	case p == nil:
		return "unset"
	case p.Basic != nil && p.Gang != nil:
		return "basic+gang"
	case p.Basic != nil:
		return "basic"
	case p.Gang != nil:
		return "gang"
	}
	return "empty"
}

// validateMinCount enforces gang.minCount ≤ spec.replicas (nil replicas is 1;
// zero replicas is always allowed). On an update that keeps minCount and
// lowers replicas under it, the error is on spec.replicas: the minCount is a
// floor for replicas. Otherwise it is on gang.minCount.
func validateMinCount(d *appsv1.Deployment, cfg *intent.DeploymentSchedulingConfiguration, oldD *appsv1.Deployment, oldCfg *intent.DeploymentSchedulingConfiguration) field.ErrorList {
	m := cfg.ExplicitMinCount()
	if m == nil {
		return nil
	}
	replicas := ptr.Deref(d.Spec.Replicas, 1)
	if !belowFloor(replicas, *m) {
		return nil
	}
	if oldD != nil && oldCfg != nil {
		oldM := oldCfg.ExplicitMinCount()
		oldReplicas := ptr.Deref(oldD.Spec.Replicas, 1)
		if oldM != nil && *oldM == *m && oldReplicas != replicas {
			return field.ErrorList{replicasBelowFloor(replicas, *m)}
		}
	}
	return field.ErrorList{field.Invalid(minCountPath, *m, fmt.Sprintf(
		"must not exceed spec.replicas (%d): the gang could never gather minCount pods; lower minCount, raise spec.replicas, or omit minCount (gang: {}) so it follows spec.replicas",
		replicas))}
}

// belowFloor reports whether a positive replica count is below minCount.
func belowFloor(replicas, minCount int32) bool {
	return replicas > 0 && replicas < minCount
}

func replicasBelowFloor(replicas, minCount int32) *field.Error {
	return field.Invalid(replicasPath, replicas, fmt.Sprintf(
		"must not be less than spec.scheduling.schedulingPolicy.gang.minCount (%d): an explicit gang minCount is a floor for replicas (scaling to 0 is allowed); lower or omit gang.minCount first (gang: {} makes it follow spec.replicas)",
		minCount))
}

// strategyType is the Deployment's strategy, defaulted the way the apiserver
// defaults it: an omitted type is RollingUpdate.
func strategyType(d *appsv1.Deployment) appsv1.DeploymentStrategyType {
	if d.Spec.Strategy.Type == "" {
		return appsv1.RollingUpdateDeploymentStrategyType
	}
	return d.Spec.Strategy.Type
}
