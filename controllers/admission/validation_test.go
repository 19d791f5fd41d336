package admission

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/intent"
)

// The KEP-6276 examples, as the annotation carries them.
const (
	example1 = `{"schedulingPolicy":{"gang":{}},"schedulingConstraints":{"topology":[{"key":"topology.kubernetes.io/zone"}]},"disruptionMode":{"all":{}}}`
	example2 = `{"schedulingPolicy":{"gang":{"minCount":3}}}`
	example3 = `{"schedulingPolicy":{"gang":{}},"resourceClaims":[{"name":"gpu-pool","resourceClaimTemplateName":"gpu-template"}]}`
)

const (
	annotationField  = "metadata.annotations[scheduling.was-harness.io/deployment-scheduling]"
	schedulingField  = "spec.scheduling"
	policyField      = "spec.scheduling.schedulingPolicy"
	gangField        = "spec.scheduling.schedulingPolicy.gang"
	minCountField    = "spec.scheduling.schedulingPolicy.gang.minCount"
	constraintsField = "spec.scheduling.schedulingConstraints"
	disruptionField  = "spec.scheduling.disruptionMode"
	claimsField      = "spec.scheduling.resourceClaims"
	replicasField    = "spec.replicas"
)

// want is one expected error: its type, its field and a fragment of its detail.
type want struct {
	typ    field.ErrorType
	field  string
	detail string
}

func inv(f string, detail ...string) want {
	return want{field.ErrorTypeInvalid, f, strings.Join(detail, "")}
}
func forb(f string, detail ...string) want {
	return want{field.ErrorTypeForbidden, f, strings.Join(detail, "")}
}

type mutation func(*appsv1.Deployment)

func replicas(n int32) mutation {
	return func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To(n) }
}
func nilReplicas(d *appsv1.Deployment) { d.Spec.Replicas = nil }
func strategy(t appsv1.DeploymentStrategyType) mutation {
	return func(d *appsv1.Deployment) { d.Spec.Strategy = appsv1.DeploymentStrategy{Type: t} }
}
func annotation(v string) mutation {
	return func(d *appsv1.Deployment) {
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[intent.DeploymentAnnotation] = v
	}
}
func noAnnotation(d *appsv1.Deployment) { delete(d.Annotations, intent.DeploymentAnnotation) }
func schedulingGroup(d *appsv1.Deployment) {
	d.Spec.Template.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("byo-group")}
}
func image(i string) mutation {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = i }
}

// newDeployment is a defaulted Deployment (as a validating webhook sees it):
// 3 replicas, Recreate, no intent, unless mutated.
func newDeployment(muts ...mutation) *appsv1.Deployment {
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "inference-server", Namespace: "ml-serving", UID: types.UID("0b7a6c3e-1111-4c1d-9d0e-5f5e5f5e5f5e")},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "inference-server"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "inference-server"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "inference-server:v1"}}},
			},
		},
	}
	for _, m := range muts {
		m(d)
	}
	return d
}

// checkErrors asserts errs holds exactly the wanted (type, field) pairs, and
// that each detail contains its fragment.
func checkErrors(t *testing.T, errs field.ErrorList, wants []want) {
	t.Helper()
	key := func(typ field.ErrorType, f string) string { return fmt.Sprintf("%s @ %s", typ, f) }
	var got, exp []string
	for _, e := range errs {
		got = append(got, key(e.Type, e.Field))
	}
	for _, w := range wants {
		exp = append(exp, key(w.typ, w.field))
	}
	sort.Strings(got)
	sort.Strings(exp)
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		t.Fatalf("errors:\n got  %q\n want %q\nfull: %v", got, exp, errs.ToAggregate())
	}
	for _, w := range wants {
		if w.detail == "" {
			continue
		}
		found := false
		for _, e := range errs {
			if e.Type == w.typ && e.Field == w.field && strings.Contains(e.Error(), w.detail) {
				found = true
			}
		}
		if !found {
			t.Errorf("no %s error at %s mentions %q: %v", w.typ, w.field, w.detail, errs.ToAggregate())
		}
	}
}

func TestValidateCreate(t *testing.T) {
	cases := []struct {
		name string
		d    *appsv1.Deployment
		gate bool
		want []want
	}{
		// Valid inputs.
		{name: "D-U4_accepts_KEP_Example_1_gang_zone_topology_all", d: newDeployment(annotation(example1)), gate: true},
		{name: "D-U4_accepts_KEP_Example_2_minCount_3_of_4", d: newDeployment(annotation(example2), replicas(4)), gate: true},
		{name: "D-U4_accepts_KEP_Example_3_template_claim", d: newDeployment(annotation(example3)), gate: true},
		{name: "D-U4_accepts_Deployment_without_intent", d: newDeployment(strategy(appsv1.RollingUpdateDeploymentStrategyType)), gate: true},
		{name: "D-U4_accepts_basic_with_topology_under_RollingUpdate", gate: true, d: newDeployment(strategy(appsv1.RollingUpdateDeploymentStrategyType),
			annotation(`{"schedulingPolicy":{"basic":{}},"schedulingConstraints":{"topology":[{"key":"topology.kubernetes.io/rack"}]}}`))},
		{name: "D-U4_accepts_empty_scheduling", d: newDeployment(annotation(`{}`), strategy("")), gate: true},
		{name: "D-U4_accepts_basic_with_single", d: newDeployment(annotation(`{"disruptionMode":{"single":{}}}`)), gate: true},
		{name: "D-U4_accepts_minCount_equal_to_replicas", d: newDeployment(annotation(example2)), gate: true},
		{name: "D-U4_accepts_minCount_1_with_nil_replicas", d: newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":1}}}`), nilReplicas), gate: true},
		{name: "D-U4_accepts_four_claims_named_and_template", gate: true, d: newDeployment(annotation(`{"schedulingPolicy":{"gang":{}},"resourceClaims":[` +
			`{"name":"a","resourceClaimName":"shared"},{"name":"b","resourceClaimTemplateName":"t"},{"name":"c","resourceClaimName":"c"},{"name":"d","resourceClaimName":"d"}]}`))},
		{name: "D-V3_accepts_zero_replicas_with_explicit_minCount", d: newDeployment(annotation(example2), replicas(0)), gate: true},

		// D-U4: minCount > replicas.
		{name: "D-U4_minCount_above_replicas", d: newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":5}}}`)), gate: true,
			want: []want{inv(minCountField, "must not exceed spec.replicas (3)")}},
		{name: "D-U4_minCount_above_nil_replicas_which_means_1", d: newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":2}}}`), nilReplicas), gate: true,
			want: []want{inv(minCountField, "must not exceed spec.replicas (1)")}},
		{name: "D-U4_minCount_zero", d: newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":0}}}`)), gate: true,
			want: []want{inv(minCountField, "greater than or equal to 1")}},

		// D-U4: RollingUpdate with gang.
		{name: "D-U4_RollingUpdate_with_gang", d: newDeployment(annotation(example1), strategy(appsv1.RollingUpdateDeploymentStrategyType)), gate: true,
			want: []want{forb(gangField, `requires spec.strategy.type "Recreate", got "RollingUpdate"`)}},
		{name: "D-U4_omitted_strategy_is_RollingUpdate_with_gang", d: newDeployment(annotation(example3), strategy("")), gate: true,
			want: []want{forb(gangField, "Recreate")}},
		{name: "D-E2_RollingUpdate_with_gang_and_minCount_above_replicas", gate: true,
			d:    newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":4}}}`), strategy(appsv1.RollingUpdateDeploymentStrategyType)),
			want: []want{forb(gangField, "Recreate"), inv(minCountField, "must not exceed spec.replicas (3)")}},

		// D-U4: resourceClaims structural violations.
		{name: "D-U4_claim_with_both_sources", gate: true,
			d:    newDeployment(annotation(`{"schedulingPolicy":{"gang":{}},"resourceClaims":[{"name":"a","resourceClaimName":"x","resourceClaimTemplateName":"y"}]}`)),
			want: []want{inv(claimsField+"[0]", "exactly one of")}},
		{name: "D-U4_claim_with_neither_source", gate: true,
			d:    newDeployment(annotation(`{"schedulingPolicy":{"gang":{}},"resourceClaims":[{"name":"a","resourceClaimName":"x"},{"name":"b"}]}`)),
			want: []want{inv(claimsField+"[1]", "must specify one of")}},
		{name: "D-U4_more_than_4_claims", gate: true,
			d: newDeployment(annotation(`{"schedulingPolicy":{"gang":{}},"resourceClaims":[` +
				`{"name":"a","resourceClaimName":"a"},{"name":"b","resourceClaimName":"b"},{"name":"c","resourceClaimName":"c"},{"name":"d","resourceClaimName":"d"},{"name":"e","resourceClaimName":"e"}]}`)),
			want: []want{{field.ErrorTypeTooMany, claimsField, "at most 4"}}},
		{name: "D-U4_duplicate_claim_names", gate: true,
			d: newDeployment(annotation(`{"schedulingPolicy":{"gang":{}},"resourceClaims":[` +
				`{"name":"gpu","resourceClaimName":"a"},{"name":"nic","resourceClaimName":"b"},{"name":"gpu","resourceClaimTemplateName":"c"}]}`)),
			want: []want{{field.ErrorTypeDuplicate, claimsField + "[2].name", `"gpu"`}}},
		{name: "D-U4_claim_name_not_a_DNS_label", gate: true,
			d:    newDeployment(annotation(`{"resourceClaims":[{"name":"GPU_pool","resourceClaimName":"a"}]}`)),
			want: []want{inv(claimsField+"[0].name", "RFC 1123")}},

		// D-U4: other building-block and builder rules.
		{name: "D-U4_empty_schedulingPolicy", d: newDeployment(annotation(`{"schedulingPolicy":{}}`)), gate: true,
			want: []want{inv(policyField, "must specify one of")}},
		{name: "D-U4_basic_with_all_disruption", d: newDeployment(annotation(`{"schedulingPolicy":{"basic":{}},"disruptionMode":{"all":{}}}`)), gate: true,
			want: []want{inv(disruptionField, "not supported with the Basic scheduling policy")}},
		{name: "D-U4_empty_disruptionMode", d: newDeployment(annotation(`{"schedulingPolicy":{"gang":{}},"disruptionMode":{}}`)), gate: true,
			want: []want{inv(disruptionField, "must specify one of")}},
		{name: "D-U4_two_topology_constraints", gate: true,
			d:    newDeployment(annotation(`{"schedulingConstraints":{"topology":[{"key":"a"},{"key":"b"}]}}`)),
			want: []want{{field.ErrorTypeTooMany, constraintsField + ".topology", ""}}},

		// D-U4: malformed annotation.
		{name: "D-U4_malformed_annotation_unknown_field", d: newDeployment(annotation(`{"schedulingPolicy":{"gang":{}},"replicas":3}`)), gate: true,
			want: []want{inv(annotationField, `unknown field "replicas"`)}},
		{name: "D-U4_malformed_annotation_wrong_type", d: newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":"3"}}}`)), gate: true,
			want: []want{inv(annotationField, "cannot unmarshal string")}},
		{name: "D-U4_malformed_annotation_not_json", d: newDeployment(annotation(`gang`)), gate: true,
			want: []want{inv(annotationField, "not a valid spec.scheduling")}},
		{name: "D-U4_malformed_annotation_trailing_data", d: newDeployment(annotation(`{} {}`)), gate: true,
			want: []want{inv(annotationField, "unexpected data after the JSON object")}},

		// D-V1: spec.scheduling with a pre-set schedulingGroup.
		{name: "D-V1_gang_with_template_schedulingGroup", d: newDeployment(annotation(example1), schedulingGroup), gate: true,
			want: []want{forb(schedulingField, "the pod template already sets spec.template.spec.schedulingGroup")}},
		{name: "D-V1_empty_scheduling_with_template_schedulingGroup", d: newDeployment(annotation(`{}`), schedulingGroup), gate: true,
			want: []want{forb(schedulingField, "spec.template.spec.schedulingGroup")}},
		{name: "D-V1_schedulingGroup_without_intent_is_accepted", d: newDeployment(schedulingGroup), gate: true},

		// D-P1: the gate is off.
		{name: "D-P1_gate_off_rejects_intent", d: newDeployment(annotation(example1)),
			want: []want{forb(schedulingField, "WorkloadWithDeployment feature gate is disabled")}},
		{name: "D-P1_gate_off_rejects_empty_scheduling", d: newDeployment(annotation(`{}`)),
			want: []want{forb(schedulingField, "WorkloadWithDeployment feature gate is disabled")}},
		{name: "D-P1_gate_off_rejects_otherwise_invalid_intent_once", d: newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":9}}}`), strategy("")),
			want: []want{forb(schedulingField, "WorkloadWithDeployment feature gate is disabled")}},
		{name: "D-P1_gate_off_Deployment_without_intent_unaffected", d: newDeployment(strategy(appsv1.RollingUpdateDeploymentStrategyType))},
		{name: "D-P1_gate_off_other_annotations_unaffected", d: newDeployment(func(d *appsv1.Deployment) {
			d.Annotations = map[string]string{"scheduling.was-harness.io/other": "x"}
		})},

		{name: "D-U4_nil_Deployment", d: nil, gate: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, ValidateCreate(tc.d, tc.gate), tc.want)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	gang3 := `{"schedulingPolicy":{"gang":{"minCount":3}}}`
	cases := []struct {
		name     string
		old, new *appsv1.Deployment
		gate     bool
		want     []want
	}{
		// D-V2: what may change.
		{name: "D-V2_unchanged_intent_with_image_change", gate: true,
			old: newDeployment(annotation(example1)), new: newDeployment(annotation(example1), image("inference-server:v2"))},
		{name: "D-V2_unchanged_intent_different_json_spelling", gate: true,
			old: newDeployment(annotation(example3)), new: newDeployment(annotation(`{"resourceClaims":[{"resourceClaimTemplateName":"gpu-template","name":"gpu-pool"}], "schedulingPolicy":{"gang":{}}}`))},
		{name: "D-V2_minCount_set_within_replicas", gate: true,
			old: newDeployment(annotation(`{"schedulingPolicy":{"gang":{}}}`)), new: newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":2}}}`))},
		{name: "D-V2_minCount_raised_within_replicas", gate: true,
			old: newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":2}}}`), replicas(4)), new: newDeployment(annotation(gang3), replicas(4))},
		{name: "D-V2_minCount_lowered", gate: true,
			old: newDeployment(annotation(gang3)), new: newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":1}}}`))},
		{name: "D-V2_minCount_unset", gate: true,
			old: newDeployment(annotation(gang3)), new: newDeployment(annotation(`{"schedulingPolicy":{"gang":{}}}`))},
		{name: "D-V2_minCount_and_replicas_raised_together", gate: true,
			old: newDeployment(annotation(gang3)), new: newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":6}}}`), replicas(6))},
		{name: "D-V2_minCount_lowered_and_replicas_lowered_together", gate: true,
			old: newDeployment(annotation(gang3)), new: newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":2}}}`), replicas(2))},
		{name: "D-V2_empty_resourceClaims_list_equals_omitted", gate: true,
			old: newDeployment(annotation(`{"schedulingPolicy":{"gang":{}}}`)), new: newDeployment(annotation(`{"schedulingPolicy":{"gang":{}},"resourceClaims":[]}`))},
		{name: "D-V2_no_intent_on_either_side", gate: true,
			old: newDeployment(), new: newDeployment(replicas(1), strategy(appsv1.RollingUpdateDeploymentStrategyType))},

		// D-V2: what may not.
		{name: "D-V2_adding_scheduling_after_creation", gate: true,
			old: newDeployment(), new: newDeployment(annotation(example1)),
			want: []want{forb(schedulingField, "cannot be added to an existing Deployment")}},
		{name: "D-V2_removing_scheduling", gate: true,
			old: newDeployment(annotation(example1)), new: newDeployment(),
			want: []want{forb(schedulingField, "cannot be removed once set")}},
		{name: "D-V2_basic_to_gang", gate: true,
			old: newDeployment(annotation(`{"schedulingPolicy":{"basic":{}}}`)), new: newDeployment(annotation(`{"schedulingPolicy":{"gang":{}}}`)),
			want: []want{inv(policyField, "variant is immutable after creation (it was basic)")}},
		{name: "D-V2_gang_to_basic", gate: true,
			old: newDeployment(annotation(gang3)), new: newDeployment(annotation(`{"schedulingPolicy":{"basic":{}}}`)),
			want: []want{inv(policyField, "variant is immutable after creation (it was gang)")}},
		{name: "D-V2_schedulingPolicy_set_after_omitted", gate: true,
			old: newDeployment(annotation(`{}`)), new: newDeployment(annotation(`{"schedulingPolicy":{"basic":{}}}`)),
			want: []want{inv(policyField, "cannot be set once created")}},
		{name: "D-V2_schedulingPolicy_cleared", gate: true,
			old: newDeployment(annotation(`{"schedulingPolicy":{"basic":{}}}`)), new: newDeployment(annotation(`{}`)),
			want: []want{inv(policyField, "cannot be cleared once set")}},
		{name: "D-V2_minCount_raised_above_replicas", gate: true,
			old: newDeployment(annotation(gang3)), new: newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":4}}}`)),
			want: []want{inv(minCountField, "must not exceed spec.replicas (3)")}},
		{name: "D-V2_minCount_set_to_zero", gate: true,
			old: newDeployment(annotation(gang3)), new: newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":0}}}`)),
			want: []want{inv(minCountField, "greater than or equal to 1")}},
		{name: "D-U4_immutable_schedulingConstraints_changed", gate: true,
			old:  newDeployment(annotation(example1)),
			new:  newDeployment(annotation(`{"schedulingPolicy":{"gang":{}},"schedulingConstraints":{"topology":[{"key":"topology.kubernetes.io/rack"}]},"disruptionMode":{"all":{}}}`)),
			want: []want{inv(constraintsField, "field is immutable")}},
		{name: "D-U4_immutable_schedulingConstraints_added", gate: true,
			old:  newDeployment(annotation(`{"schedulingPolicy":{"gang":{}}}`)),
			new:  newDeployment(annotation(`{"schedulingPolicy":{"gang":{}},"schedulingConstraints":{"topology":[{"key":"topology.kubernetes.io/zone"}]}}`)),
			want: []want{inv(constraintsField, "field is immutable")}},
		{name: "D-U4_immutable_disruptionMode_changed", gate: true,
			old:  newDeployment(annotation(example1)),
			new:  newDeployment(annotation(`{"schedulingPolicy":{"gang":{}},"schedulingConstraints":{"topology":[{"key":"topology.kubernetes.io/zone"}]},"disruptionMode":{"single":{}}}`)),
			want: []want{inv(disruptionField, "field is immutable")}},
		{name: "D-U4_immutable_resourceClaims_changed", gate: true,
			old:  newDeployment(annotation(example3)),
			new:  newDeployment(annotation(`{"schedulingPolicy":{"gang":{}},"resourceClaims":[{"name":"gpu-pool","resourceClaimName":"shared-gpu"}]}`)),
			want: []want{inv(claimsField, "field is immutable")}},
		{name: "D-U4_immutable_resourceClaims_removed", gate: true,
			old: newDeployment(annotation(example3)), new: newDeployment(annotation(`{"schedulingPolicy":{"gang":{}}}`)),
			want: []want{inv(claimsField, "field is immutable")}},
		{name: "D-V2_every_immutable_field_at_once", gate: true,
			old: newDeployment(annotation(`{"schedulingPolicy":{"gang":{}},"schedulingConstraints":{"topology":[{"key":"a"}]},"disruptionMode":{"single":{}},"resourceClaims":[{"name":"a","resourceClaimName":"a"}]}`)),
			new: newDeployment(annotation(`{"schedulingPolicy":{"basic":{}},"schedulingConstraints":{"topology":[{"key":"b"}]},"disruptionMode":{"all":{}},"resourceClaims":[{"name":"b","resourceClaimName":"b"}]}`)),
			want: []want{
				inv(policyField, "variant is immutable"), inv(constraintsField, "field is immutable"), inv(disruptionField, "field is immutable"),
				inv(claimsField, "field is immutable"), inv(disruptionField, "not supported with the Basic scheduling policy"),
			}},
		{name: "D-U4_strategy_changed_to_RollingUpdate_with_gang", gate: true,
			old: newDeployment(annotation(example1)), new: newDeployment(annotation(example1), strategy(appsv1.RollingUpdateDeploymentStrategyType)),
			want: []want{forb(gangField, "Recreate")}},
		{name: "D-V1_template_gains_schedulingGroup", gate: true,
			old: newDeployment(annotation(example1)), new: newDeployment(annotation(example1), schedulingGroup),
			want: []want{forb(schedulingField, "spec.template.spec.schedulingGroup")}},
		{name: "D-U4_malformed_new_annotation", gate: true,
			old: newDeployment(annotation(example1)), new: newDeployment(annotation(`{"schedulingPolicy":{"gang":{}},"minCount":2}`)),
			want: []want{inv(annotationField, `unknown field "minCount"`)}},
		{name: "D-V2_removing_a_malformed_stored_annotation", gate: true,
			old: newDeployment(annotation(`{not json`)), new: newDeployment()},
		{name: "D-V2_replacing_a_malformed_stored_annotation_is_adding", gate: true,
			old: newDeployment(annotation(`{not json`)), new: newDeployment(annotation(example1)),
			want: []want{forb(schedulingField, "cannot be added to an existing Deployment")}},

		// D-V3: scaling spec.replicas below an explicit minCount.
		{name: "D-V3_replicas_below_explicit_minCount", gate: true,
			old: newDeployment(annotation(example2), replicas(4)), new: newDeployment(annotation(example2), replicas(2)),
			want: []want{inv(replicasField, "explicit gang minCount is a floor")}},
		{name: "D-V3_replicas_nil_means_1_below_minCount", gate: true,
			old: newDeployment(annotation(example2)), new: newDeployment(annotation(example2), nilReplicas),
			want: []want{inv(replicasField, "minCount (3)")}},
		{name: "D-V3_replicas_down_to_minCount", gate: true,
			old: newDeployment(annotation(example2), replicas(4)), new: newDeployment(annotation(example2), replicas(3))},
		{name: "D-V3_replicas_up_with_explicit_minCount", gate: true,
			old: newDeployment(annotation(example2)), new: newDeployment(annotation(example2), replicas(10))},
		{name: "D-V3_scale_to_zero_keeps_minCount", gate: true,
			old: newDeployment(annotation(example2)), new: newDeployment(annotation(example2), replicas(0))},
		{name: "D-V3_scale_back_from_zero_below_minCount", gate: true,
			old: newDeployment(annotation(example2), replicas(0)), new: newDeployment(annotation(example2), replicas(1)),
			want: []want{inv(replicasField, "floor")}},
		{name: "D-V3_replicas_below_derived_minCount_is_fine", gate: true,
			old: newDeployment(annotation(example1)), new: newDeployment(annotation(example1), replicas(1))},

		// D-P1: the gate is off.
		{name: "D-P1_gate_off_unchanged_intent_ratchets",
			old: newDeployment(annotation(example1)), new: newDeployment(annotation(example1), image("inference-server:v2"))},
		{name: "D-P1_gate_off_minCount_change_rejected",
			old: newDeployment(annotation(gang3)), new: newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":2}}}`)),
			want: []want{forb(schedulingField, "WorkloadWithDeployment feature gate is disabled")}},
		{name: "D-P1_gate_off_adding_rejected",
			old: newDeployment(), new: newDeployment(annotation(example1)),
			want: []want{forb(schedulingField, "feature gate is disabled"), forb(schedulingField, "cannot be added to an existing Deployment")}},
		{name: "D-P1_gate_off_removing_is_still_NoUnset",
			old: newDeployment(annotation(example1)), new: newDeployment(),
			want: []want{forb(schedulingField, "cannot be removed once set")}},
		{name: "D-P1_gate_off_Deployment_without_intent_unaffected",
			old: newDeployment(), new: newDeployment(replicas(0), strategy(appsv1.RollingUpdateDeploymentStrategyType))},
		{name: "D-P1_gate_off_stored_minCount_floor_still_applies",
			old: newDeployment(annotation(example2), replicas(4)), new: newDeployment(annotation(example2), replicas(1)),
			want: []want{inv(replicasField, "floor")}},

		{name: "D-U4_nil_old_is_a_create", gate: true, old: nil, new: newDeployment(annotation(example1))},
		{name: "D-U4_nil_new", gate: true, old: newDeployment(), new: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, ValidateUpdate(tc.new, tc.old, tc.gate), tc.want)
		})
	}
}

func TestValidateScale(t *testing.T) {
	cases := []struct {
		name     string
		d        *appsv1.Deployment
		replicas int32
		want     []want
	}{
		{name: "D-V3_scale_below_explicit_minCount", d: newDeployment(annotation(example2), replicas(4)), replicas: 2,
			want: []want{inv(replicasField, "must not be less than spec.scheduling.schedulingPolicy.gang.minCount (3)")}},
		{name: "D-V3_scale_to_1_below_explicit_minCount", d: newDeployment(annotation(example2), replicas(4)), replicas: 1,
			want: []want{inv(replicasField, "floor")}},
		{name: "D-V3_scale_to_explicit_minCount", d: newDeployment(annotation(example2), replicas(4)), replicas: 3},
		{name: "D-V3_scale_up", d: newDeployment(annotation(example2), replicas(4)), replicas: 40},
		{name: "D-V3_scale_to_zero", d: newDeployment(annotation(example2), replicas(4)), replicas: 0},
		{name: "D-V3_gang_without_explicit_minCount", d: newDeployment(annotation(example1)), replicas: 1},
		{name: "D-V3_basic", d: newDeployment(annotation(`{"schedulingPolicy":{"basic":{}}}`)), replicas: 1},
		{name: "D-V3_no_intent", d: newDeployment(), replicas: 1},
		{name: "D-V3_malformed_stored_annotation", d: newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":3}},"x":1}`)), replicas: 1},
		{name: "D-V3_nil_Deployment", d: nil, replicas: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkErrors(t, ValidateScale(tc.d, tc.replicas), tc.want)
		})
	}
}
