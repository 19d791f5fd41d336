// Package intent carries a Deployment's or StatefulSet's Workload-Aware
// Scheduling intent until apps/v1 has the KEPs' field.
//
// KEP-6276 adds DeploymentSpec.scheduling and KEP-6277 StatefulSetSpec.scheduling,
// both the same four scheduling.k8s.io/v1alpha3 building blocks. apps/v1 in
// Kubernetes 1.37 has no such field, so the reference implementation reads the
// very same structure, as JSON, from one annotation on the object
// (DeploymentAnnotation or StatefulSetAnnotation):
//
//	metadata:
//	  annotations:
//	    scheduling.was-harness.io/deployment-scheduling: |
//	      {"schedulingPolicy": {"gang": {}},
//	       "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
//	       "disruptionMode": {"all": {}}}
//
// Everything the KEP says of spec.scheduling applies to the annotation's value,
// and error messages name the field as spec.scheduling.<path>. Parsing is
// strict: unknown fields, wrong types and trailing data are errors, never
// silently ignored, and field names are matched case-sensitively and only
// once, as the apiserver decodes the native field with fieldValidation=Strict.
package intent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	k8sjson "sigs.k8s.io/json"
)

const (
	// DeploymentAnnotation carries spec.scheduling of a Deployment.
	DeploymentAnnotation = "scheduling.was-harness.io/deployment-scheduling"
	// StatefulSetAnnotation carries spec.scheduling of a StatefulSet.
	StatefulSetAnnotation = "scheduling.was-harness.io/statefulset-scheduling"
)

// DeploymentSchedulingConfiguration is KEP-6276's spec.scheduling.
type DeploymentSchedulingConfiguration = SchedulingConfiguration

// StatefulSetSchedulingConfiguration is KEP-6277's spec.scheduling.
type StatefulSetSchedulingConfiguration = SchedulingConfiguration

// SchedulingConfiguration is the spec.scheduling both KEPs add, field for
// field (it mirrors batch/v1 JobSchedulingConfiguration).
type SchedulingConfiguration struct {
	// SchedulingPolicy selects basic or gang; nil means basic. gang.minCount
	// is optional; unset, the controller derives it from replicas.
	SchedulingPolicy *schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy `json:"schedulingPolicy,omitempty"`
	// SchedulingConstraints carries topology placement rules (at most one).
	SchedulingConstraints *schedulingv1alpha3.WorkloadPodGroupSchedulingConstraints `json:"schedulingConstraints,omitempty"`
	// DisruptionMode (single | all) is passed through to the PodGroup.
	DisruptionMode *schedulingv1alpha3.WorkloadPodGroupDisruptionMode `json:"disruptionMode,omitempty"`
	// ResourceClaims are shared by all pods of the gang; at most 4, unique names.
	ResourceClaims []schedulingv1alpha3.WorkloadPodGroupResourceClaim `json:"resourceClaims,omitempty"`
}

// IsGang reports whether the policy is gang.
func (c *SchedulingConfiguration) IsGang() bool {
	return c != nil && c.SchedulingPolicy != nil && c.SchedulingPolicy.Gang != nil
}

// ExplicitMinCount returns the user's gang.minCount, or nil when unset (or not gang).
func (c *SchedulingConfiguration) ExplicitMinCount() *int32 {
	if !c.IsGang() {
		return nil
	}
	return c.SchedulingPolicy.Gang.MinCount
}

// ParseError says why the annotation is not a valid spec.scheduling.
type ParseError struct {
	Annotation string
	Err        error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("annotation %s is not a valid spec.scheduling: %v", e.Annotation, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// Parse decodes a spec.scheduling value strictly.
func Parse(value string) (*SchedulingConfiguration, error) {
	if trimmed := bytes.TrimSpace([]byte(value)); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("want a JSON object such as {\"schedulingPolicy\":{\"gang\":{}}}, got %q", value)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(value)))
	dec.DisallowUnknownFields()
	cfg := &SchedulingConfiguration{}
	if err := dec.Decode(cfg); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("unexpected data after the JSON object")
	}
	// encoding/json matches field names case-insensitively and merges
	// duplicate keys; the apiserver decodes a native field with neither
	// (sigs.k8s.io/json, fieldValidation=Strict), so neither may the annotation.
	if strictErrs, err := k8sjson.UnmarshalStrict([]byte(value), &SchedulingConfiguration{}); err != nil || len(strictErrs) > 0 {
		return nil, errors.Join(append(strictErrs, err)...)
	}
	return cfg, nil
}

// FromAnnotations returns a Deployment's spec.scheduling: nil (and no error)
// when the annotation is absent, a *ParseError when it is malformed.
func FromAnnotations(annotations map[string]string) (*DeploymentSchedulingConfiguration, error) {
	return FromAnnotation(annotations, DeploymentAnnotation)
}

// FromAnnotation reads spec.scheduling from the annotation key.
func FromAnnotation(annotations map[string]string, key string) (*SchedulingConfiguration, error) {
	value, ok := annotations[key]
	if !ok {
		return nil, nil
	}
	cfg, err := Parse(value)
	if err != nil {
		return nil, &ParseError{Annotation: key, Err: err}
	}
	return cfg, nil
}

// Marshal renders cfg as the annotation's value.
func Marshal(cfg *SchedulingConfiguration) (string, error) {
	data, err := json.Marshal(cfg)
	return string(data), err
}

// SetAnnotation writes a Deployment's cfg into annotations (nil cfg removes
// it) and returns the map.
func SetAnnotation(annotations map[string]string, cfg *DeploymentSchedulingConfiguration) (map[string]string, error) {
	return SetAnnotationKey(annotations, DeploymentAnnotation, cfg)
}

// SetAnnotationKey writes cfg into annotations under key (nil cfg removes it).
func SetAnnotationKey(annotations map[string]string, key string, cfg *SchedulingConfiguration) (map[string]string, error) {
	if cfg == nil {
		delete(annotations, key)
		return annotations, nil
	}
	v, err := Marshal(cfg)
	if err != nil {
		return annotations, err
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[key] = v
	return annotations, nil
}
