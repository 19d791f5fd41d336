package admission

// Helpers shared by the Deployment (KEP-6276, validation.go) and StatefulSet
// (KEP-6277, statefulset.go) validation. Both KEPs embed the same four
// scheduling.k8s.io/v1alpha3 building blocks as spec.scheduling
// (intent.SchedulingConfiguration), carried by one annotation per kind until
// apps/v1 has the field, and both compile it with workloadbuilder.

import (
	"context"
	"errors"
	"fmt"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder"

	"github.com/workload-aware/apps-harness/api/intent"
)

// MaxResourceClaims is the most entries spec.scheduling.resourceClaims may
// hold (+k8s:maxItems=4 on the field; scheduling/v1beta1 MaxPodGroupResourceClaims).
const MaxResourceClaims = 4

// unnamedItem names the WorkloadItem of an object that has no name yet (a
// CREATE with only metadata.generateName): the builder requires a non-empty
// item name, and in validation the name only correlates old and new trees.
const unnamedItem = "unnamed"

// intentAnnotationPath is where a malformed intent annotation is reported: it
// has no native counterpart.
func intentAnnotationPath(key string) *field.Path {
	return field.NewPath("metadata", "annotations").Key(key)
}

// parseIntent reads spec.scheduling from the annotation key: nil and no error
// when absent; a malformed value is one Invalid error at the annotation,
// quoting the parse error. typeName names the configuration type the value
// must hold (DeploymentSchedulingConfiguration, StatefulSetSchedulingConfiguration).
func parseIntent(annotations map[string]string, key, typeName string) (*intent.SchedulingConfiguration, field.ErrorList) {
	cfg, err := intent.FromAnnotation(annotations, key)
	if err == nil {
		return cfg, nil
	}
	detail := err.Error()
	var pe *intent.ParseError
	if errors.As(err, &pe) {
		detail = fmt.Sprintf("not a valid spec.scheduling: %v", pe.Err)
	}
	return nil, field.ErrorList{field.Invalid(intentAnnotationPath(key), field.OmitValueType{}, fmt.Sprintf(
		"%s; the value must be a JSON %s (schedulingPolicy, schedulingConstraints, disruptionMode, resourceClaims)",
		detail, typeName))}
}

// gateForbiddenFor is +k8s:ifDisabled(gate)=+k8s:forbidden on spec.scheduling
// (path), carried by the annotation key.
func gateForbiddenFor(path *field.Path, gate, key string) *field.Error {
	return field.Forbidden(path, fmt.Sprintf(
		"spec.scheduling (annotation %s) cannot be set: the %s feature gate is disabled; remove the annotation or enable the gate",
		key, gate))
}

// validateClaimsList applies +k8s:maxItems=4 and the +listMapKey=name
// uniqueness of spec.scheduling.resourceClaims (path). The exactly-one-of
// source rule is the building block's own DV
// (Validate_WorkloadPodGroupResourceClaim) and is left to the builder, so it
// is reported once.
func validateClaimsList(path *field.Path, claims []schedulingv1alpha3.WorkloadPodGroupResourceClaim) field.ErrorList {
	var allErrs field.ErrorList
	if len(claims) > MaxResourceClaims {
		allErrs = append(allErrs, field.TooMany(path, len(claims), MaxResourceClaims).WithOrigin("maxItems"))
	}
	seen := make(map[string]bool, len(claims))
	for i, c := range claims {
		if c.Name == "" {
			continue // Required, reported by the building block's DV
		}
		if seen[c.Name] {
			allErrs = append(allErrs, field.Duplicate(path.Index(i).Child("name"), c.Name))
		}
		seen[c.Name] = true
	}
	return allErrs
}

// validateWithBuilder runs workloadbuilder Validate, with declarative
// validation on (a webhook, unlike the apiserver, has no DV pass of its own),
// over the WorkloadItem tree the controller compiles. build returns the new
// tree and, for an update, the old one (nil for a create); the old tree is
// passed as OldRoot so the update-time DV rules apply and unchanged data
// ratchets. opts are the controller's BuildOptions (the allow-lists). A panic
// while building or validating is reported as an internal error at path
// (spec.scheduling).
func validateWithBuilder(path *field.Path, opts workloadbuilder.BuildOptions, build func() (item, old *workloadbuilder.WorkloadItem)) (errs field.ErrorList) {
	defer func() {
		if r := recover(); r != nil {
			errs = field.ErrorList{field.InternalError(path, fmt.Errorf("validating spec.scheduling: %v", r))}
		}
	}()
	item, old := build()
	if item.Name == "" {
		item.Name = unnamedItem
	}
	var in workloadbuilder.ValidationInput
	if old != nil {
		in.OldRoot = old
		// Old and new are correlated by name; they are the same object.
		in.OldRoot.Name = item.Name
	}
	opts.DisableDeclarativeValidation = false // Name/Namespace/Owner only matter to BuildWorkload
	return workloadbuilder.NewBuilder(item, opts).Validate(context.Background(), in)
}

// validateImmutable is +k8s:immutable: any change, including setting or
// clearing, is rejected with the message DV uses.
func validateImmutable(path *field.Path, newV, oldV any) field.ErrorList {
	if equality.Semantic.DeepEqual(newV, oldV) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, nil, "field is immutable").WithOrigin("immutable")}
}
