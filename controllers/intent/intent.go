// Package intent carries a Deployment's Workload-Aware Scheduling intent until
// apps/v1 has the KEP-6276 field.
//
// KEP-6276 adds DeploymentSpec.scheduling (DeploymentSchedulingConfiguration,
// built from the scheduling.k8s.io/v1alpha3 building blocks). apps/v1 in
// Kubernetes 1.37 has no such field, so the reference implementation reads the
// very same structure, as JSON, from one annotation on the Deployment:
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
// silently ignored.
package intent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
)

// DeploymentAnnotation is the annotation that carries spec.scheduling of a Deployment.
const DeploymentAnnotation = "scheduling.was-harness.io/deployment-scheduling"

// DeploymentSchedulingConfiguration is KEP-6276's spec.scheduling, field for
// field (it mirrors batch/v1 JobSchedulingConfiguration).
type DeploymentSchedulingConfiguration struct {
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
func (c *DeploymentSchedulingConfiguration) IsGang() bool {
	return c != nil && c.SchedulingPolicy != nil && c.SchedulingPolicy.Gang != nil
}

// ExplicitMinCount returns the user's gang.minCount, or nil when unset (or not gang).
func (c *DeploymentSchedulingConfiguration) ExplicitMinCount() *int32 {
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
func Parse(value string) (*DeploymentSchedulingConfiguration, error) {
	if trimmed := bytes.TrimSpace([]byte(value)); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("want a JSON object such as {\"schedulingPolicy\":{\"gang\":{}}}, got %q", value)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(value)))
	dec.DisallowUnknownFields()
	cfg := &DeploymentSchedulingConfiguration{}
	if err := dec.Decode(cfg); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("unexpected data after the JSON object")
	}
	return cfg, nil
}

// FromAnnotations returns the Deployment's spec.scheduling: nil (and no error)
// when the annotation is absent, a *ParseError when it is malformed.
func FromAnnotations(annotations map[string]string) (*DeploymentSchedulingConfiguration, error) {
	value, ok := annotations[DeploymentAnnotation]
	if !ok {
		return nil, nil
	}
	cfg, err := Parse(value)
	if err != nil {
		return nil, &ParseError{Annotation: DeploymentAnnotation, Err: err}
	}
	return cfg, nil
}

// Marshal renders cfg as the annotation's value.
func Marshal(cfg *DeploymentSchedulingConfiguration) (string, error) {
	data, err := json.Marshal(cfg)
	return string(data), err
}

// SetAnnotation writes cfg into annotations (nil cfg removes it) and returns the map.
func SetAnnotation(annotations map[string]string, cfg *DeploymentSchedulingConfiguration) (map[string]string, error) {
	if cfg == nil {
		delete(annotations, DeploymentAnnotation)
		return annotations, nil
	}
	v, err := Marshal(cfg)
	if err != nil {
		return annotations, err
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[DeploymentAnnotation] = v
	return annotations, nil
}
