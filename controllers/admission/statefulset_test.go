package admission

import (
	"fmt"
	"reflect"
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

// The exact messages KEP-6277 gives, as field.Error.Error() renders them.
const (
	gangNeedsParallelMsg = "spec.scheduling.schedulingPolicy.gang: Forbidden: gang scheduling requires podManagementPolicy: Parallel; OrderedReady creates pods sequentially, which can never satisfy a gang"
	partitionMsg         = "spec.updateStrategy.rollingUpdate.partition: Forbidden: partitioned rollouts are not supported for StatefulSets with spec.scheduling set"
	immutableMsg         = "spec.scheduling: Invalid value: null: field is immutable"
)

const (
	stsAnnotationField = "metadata.annotations[scheduling.was-harness.io/statefulset-scheduling]"
	partitionField     = "spec.updateStrategy.rollingUpdate.partition"
	stsGateDetail      = "the WorkloadWithStatefulSet feature gate is disabled"
)

// StatefulSet intents used across the tests.
const (
	stsGang         = `{"schedulingPolicy":{"gang":{}}}`
	stsGangFull     = `{"schedulingPolicy":{"gang":{}},"schedulingConstraints":{"topology":[{"key":"topology.kubernetes.io/rack"}]},"disruptionMode":{"all":{}},"resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"gpu-template"}]}`
	stsBasicShared  = `{"schedulingPolicy":{"basic":{}},"schedulingConstraints":{"topology":[{"key":"topology.kubernetes.io/zone"}]},"resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"gpu-template"},{"name":"nic","resourceClaimName":"shared-nic"}]}`
	stsBasic        = `{"schedulingPolicy":{"basic":{}}}`
	stsGangMinCount = `{"schedulingPolicy":{"gang":{"minCount":3}}}`
)

type setMutation func(*appsv1.StatefulSet)

func stsIntent(v string) setMutation {
	return func(s *appsv1.StatefulSet) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[intent.StatefulSetAnnotation] = v
	}
}
func podManagement(p appsv1.PodManagementPolicyType) setMutation {
	return func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = p }
}
func partition(n int32) setMutation {
	return func(s *appsv1.StatefulSet) {
		s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{
			Type:          appsv1.RollingUpdateStatefulSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To(n)},
		}
	}
}
func onDelete(s *appsv1.StatefulSet) {
	s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
}
func setReplicas(n int32) setMutation {
	return func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To(n) }
}
func setImage(i string) setMutation {
	return func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = i }
}
func setLabel(k, v string) setMutation {
	return func(s *appsv1.StatefulSet) {
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[k] = v
	}
}

// podClaimFromTemplate and podClaimFromName are pod template spec.resourceClaims entries.
func podClaimFromTemplate(name, template string) corev1.PodResourceClaim {
	return corev1.PodResourceClaim{Name: name, ResourceClaimTemplateName: ptr.To(template)}
}
func podClaimFromName(name, claim string) corev1.PodResourceClaim {
	return corev1.PodResourceClaim{Name: name, ResourceClaimName: ptr.To(claim)}
}
func podClaims(claims ...corev1.PodResourceClaim) setMutation {
	return func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.ResourceClaims = claims }
}

// matchingClaims are the pod template entries matching stsGangFull and stsBasicShared.
var matchingClaims = podClaims(podClaimFromTemplate("gpu", "gpu-template"), podClaimFromName("nic", "shared-nic"))

// newStatefulSet is a defaulted StatefulSet (as a validating webhook sees
// it): 3 replicas, Parallel, RollingUpdate with partition 0, no intent,
// unless mutated.
func newStatefulSet(muts ...setMutation) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "kv-store", Namespace: "databases", UID: types.UID("5d1c7a2e-2222-4b6a-8f3e-6a6a6a6a6a6a")},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](3),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			ServiceName:         "kv-store",
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "kv-store"}},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type:          appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "kv-store"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "kv-store:v1"}}},
			},
		},
	}
	for _, m := range muts {
		m(s)
	}
	return s
}

// checkExact asserts that errs has an error whose Error() is exactly msg.
func checkExact(t *testing.T, errs field.ErrorList, msg string) {
	t.Helper()
	for _, e := range errs {
		if e.Error() == msg {
			return
		}
	}
	t.Errorf("no error reads exactly\n  %s\ngot: %v", msg, errs.ToAggregate())
}

// checkWarnings asserts the warnings are exactly wantWarnings (in order).
func checkWarnings(t *testing.T, got, wantWarnings []string) {
	t.Helper()
	if len(got) == 0 && len(wantWarnings) == 0 {
		return
	}
	if !reflect.DeepEqual(got, wantWarnings) {
		t.Errorf("warnings:\n got  %q\n want %q", got, wantWarnings)
	}
}

func missingClaimWarning(i int, name string) string {
	return fmt.Sprintf(`spec.scheduling.resourceClaims[%d]: pod template has no matching spec.resourceClaims entry %q; pods will not use the PodGroup's shared claim`, i, name)
}

type stsCase struct {
	name     string
	set      *appsv1.StatefulSet
	old      *appsv1.StatefulSet // update cases only
	gate     bool
	want     []want
	exact    []string // messages some error must read exactly
	warnings []string
}

func runCreate(t *testing.T, cases []stsCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := ValidateStatefulSetCreate(tc.set, tc.gate)
			checkErrors(t, errs, tc.want)
			for _, m := range tc.exact {
				checkExact(t, errs, m)
			}
			checkWarnings(t, warnings, tc.warnings)
		})
	}
}

func runUpdate(t *testing.T, cases []stsCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := ValidateStatefulSetUpdate(tc.set, tc.old, tc.gate)
			checkErrors(t, errs, tc.want)
			for _, m := range tc.exact {
				checkExact(t, errs, m)
			}
			checkWarnings(t, warnings, tc.warnings)
		})
	}
}

func TestValidateStatefulSetCreate(t *testing.T) {
	runCreate(t, []stsCase{
		// S-V1: gang requires Parallel.
		{name: "S-V1_OrderedReady_with_gang", gate: true, set: newStatefulSet(stsIntent(stsGang), podManagement(appsv1.OrderedReadyPodManagement)),
			want: []want{forb(gangField, "requires podManagementPolicy: Parallel")}, exact: []string{gangNeedsParallelMsg}},
		{name: "S-V1_unset_podManagementPolicy_is_OrderedReady", gate: true, set: newStatefulSet(stsIntent(stsGang), podManagement("")),
			want: []want{forb(gangField, "")}, exact: []string{gangNeedsParallelMsg}},
		{name: "S-V1_OrderedReady_with_full_gang_intent_only_the_gang_error", gate: true,
			set:  newStatefulSet(stsIntent(stsGangFull), podManagement(appsv1.OrderedReadyPodManagement), matchingClaims),
			want: []want{forb(gangField, "")}, exact: []string{gangNeedsParallelMsg}},
		{name: "S-V1_OrderedReady_with_basic_is_fine", gate: true, set: newStatefulSet(stsIntent(stsBasic), podManagement(appsv1.OrderedReadyPodManagement))},

		// S-V2: a user-set minCount is forbidden in Alpha.
		{name: "S-V2_user_set_minCount", gate: true, set: newStatefulSet(stsIntent(stsGangMinCount)),
			want: []want{forb(minCountField, "derives the gang minCount from spec.replicas")}},
		{name: "S-V2_user_set_minCount_equal_to_1", gate: true, set: newStatefulSet(stsIntent(`{"schedulingPolicy":{"gang":{"minCount":1}}}`)),
			want: []want{forb(minCountField, "must not be set")}},
		{name: "S-V2_user_set_minCount_zero_reported_once", gate: true, set: newStatefulSet(stsIntent(`{"schedulingPolicy":{"gang":{"minCount":0}}}`)),
			want: []want{forb(minCountField, "must not be set")}},
		{name: "S-V2_user_set_minCount_with_OrderedReady_both_errors", gate: true,
			set:  newStatefulSet(stsIntent(stsGangMinCount), podManagement(appsv1.OrderedReadyPodManagement)),
			want: []want{forb(minCountField, ""), forb(gangField, "")}, exact: []string{gangNeedsParallelMsg}},

		// S-V3: partitioned rollouts with spec.scheduling.
		{name: "S-V3_create_partition_with_gang", gate: true, set: newStatefulSet(stsIntent(stsGang), partition(2)),
			want: []want{forb(partitionField, "")}, exact: []string{partitionMsg}},
		{name: "S-V3_create_partition_1_with_empty_scheduling", gate: true, set: newStatefulSet(stsIntent(`{}`), partition(1)),
			want: []want{forb(partitionField, "")}, exact: []string{partitionMsg}},
		{name: "S-V3_create_partition_0_is_fine", gate: true, set: newStatefulSet(stsIntent(stsGang), partition(0))},
		{name: "S-V3_create_nil_partition_is_fine", gate: true, set: newStatefulSet(stsIntent(stsGang), func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.Partition = nil
		})},
		{name: "S-V3_create_nil_rollingUpdate_is_fine", gate: true, set: newStatefulSet(stsIntent(stsGang), func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{}
		})},
		{name: "S-V3_create_OnDelete_is_fine", gate: true, set: newStatefulSet(stsIntent(stsGang), onDelete)},
		{name: "S-V3_create_partition_without_intent_is_fine", gate: true, set: newStatefulSet(partition(2))},

		// S-V4: disruptionMode all needs gang (the builder's rule).
		{name: "S-V4_basic_with_all", gate: true, set: newStatefulSet(stsIntent(`{"schedulingPolicy":{"basic":{}},"disruptionMode":{"all":{}}}`)),
			want: []want{inv(disruptionField, "not supported with the Basic scheduling policy")}},
		{name: "S-V4_no_policy_with_all", gate: true, set: newStatefulSet(stsIntent(`{"disruptionMode":{"all":{}}}`)),
			want: []want{inv(disruptionField, "not supported with the Basic scheduling policy")}},
		{name: "S-V4_basic_with_all_under_OrderedReady", gate: true,
			set:  newStatefulSet(stsIntent(`{"schedulingPolicy":{"basic":{}},"disruptionMode":{"all":{}}}`), podManagement(appsv1.OrderedReadyPodManagement)),
			want: []want{inv(disruptionField, "Basic")}},
		{name: "S-V4_basic_with_single_is_fine", gate: true, set: newStatefulSet(stsIntent(`{"schedulingPolicy":{"basic":{}},"disruptionMode":{"single":{}}}`))},
		{name: "S-V4_gang_with_all_is_fine", gate: true, set: newStatefulSet(stsIntent(`{"schedulingPolicy":{"gang":{}},"disruptionMode":{"all":{}}}`))},
		{name: "S-V4_empty_disruptionMode", gate: true, set: newStatefulSet(stsIntent(`{"schedulingPolicy":{"gang":{}},"disruptionMode":{}}`)),
			want: []want{inv(disruptionField, "must specify one of")}},

		// S-V5: what is accepted.
		{name: "S-V5_Parallel_with_gang", gate: true, set: newStatefulSet(stsIntent(stsGang))},
		{name: "S-V5_Parallel_with_gang_topology_all_and_shared_claim", gate: true, set: newStatefulSet(stsIntent(stsGangFull), matchingClaims)},
		{name: "S-V5_Parallel_with_gang_and_zero_replicas", gate: true, set: newStatefulSet(stsIntent(stsGang), setReplicas(0))},
		{name: "S-V5_Parallel_with_gang_and_nil_replicas", gate: true, set: newStatefulSet(stsIntent(stsGang), func(s *appsv1.StatefulSet) { s.Spec.Replicas = nil })},
		{name: "S-V5_OrderedReady_with_basic_topology_and_shared_claims", gate: true,
			set: newStatefulSet(stsIntent(stsBasicShared), podManagement(appsv1.OrderedReadyPodManagement), matchingClaims)},
		{name: "S-V5_unset_podManagementPolicy_with_basic_topology_and_shared_claims", gate: true,
			set: newStatefulSet(stsIntent(stsBasicShared), podManagement(""), matchingClaims)},
		{name: "S-V5_empty_scheduling_OrderedReady", gate: true, set: newStatefulSet(stsIntent(`{}`), podManagement(appsv1.OrderedReadyPodManagement))},
		{name: "S-V5_empty_scheduling_Parallel", gate: true, set: newStatefulSet(stsIntent(`{}`))},
		{name: "S-V5_no_intent_OrderedReady_with_partition", gate: true, set: newStatefulSet(podManagement(appsv1.OrderedReadyPodManagement), partition(3))},
		{name: "S-V5_Deployment_annotation_on_a_StatefulSet_is_not_its_intent", gate: true,
			set: newStatefulSet(podManagement(appsv1.OrderedReadyPodManagement), func(s *appsv1.StatefulSet) {
				s.Annotations = map[string]string{intent.DeploymentAnnotation: stsGangMinCount}
			})},
		{name: "S-V5_generateName_without_name", gate: true, set: newStatefulSet(stsIntent(stsGang), func(s *appsv1.StatefulSet) {
			s.Name, s.GenerateName, s.UID = "", "kv-store-", ""
		})},
		{name: "S-V5_empty_schedulingPolicy", gate: true, set: newStatefulSet(stsIntent(`{"schedulingPolicy":{}}`)),
			want: []want{inv(policyField, "must specify one of")}},
		{name: "S-V5_two_topology_constraints", gate: true, set: newStatefulSet(stsIntent(`{"schedulingConstraints":{"topology":[{"key":"a"},{"key":"b"}]}}`)),
			want: []want{{field.ErrorTypeTooMany, constraintsField + ".topology", ""}}},
		{name: "S-V5_malformed_annotation_unknown_field", gate: true, set: newStatefulSet(stsIntent(`{"schedulingPolicy":{"gang":{}},"podManagementPolicy":"Parallel"}`)),
			want: []want{inv(stsAnnotationField, `unknown field "podManagementPolicy"`)}},
		{name: "S-V5_malformed_annotation_names_the_StatefulSet_type", gate: true, set: newStatefulSet(stsIntent(`gang`)),
			want: []want{inv(stsAnnotationField, "; the value must be a JSON StatefulSetSchedulingConfiguration")}},
		{name: "S-V5_malformed_annotation_stops_everything", gate: true,
			set:  newStatefulSet(stsIntent(`{"schedulingPolicy":{"gang":{"minCount":"3"}}}`), podManagement(appsv1.OrderedReadyPodManagement), partition(1)),
			want: []want{inv(stsAnnotationField, "cannot unmarshal string")}},
		{name: "S-V5_nil_StatefulSet", gate: true, set: nil},

		// S-V7: the resourceClaims list.
		{name: "S-V7_four_claims_one_source_each", gate: true,
			set: newStatefulSet(stsIntent(`{"schedulingPolicy":{"gang":{}},"resourceClaims":[`+
				`{"name":"a","resourceClaimName":"a"},{"name":"b","resourceClaimTemplateName":"b"},{"name":"c","resourceClaimName":"c"},{"name":"d","resourceClaimName":"d"}]}`),
				podClaims(podClaimFromName("a", "a"), podClaimFromTemplate("b", "b"), podClaimFromName("c", "c"), podClaimFromName("d", "d")))},
		{name: "S-V7_claim_with_both_sources", gate: true,
			set:  newStatefulSet(stsIntent(`{"schedulingPolicy":{"gang":{}},"resourceClaims":[{"name":"a","resourceClaimName":"x","resourceClaimTemplateName":"y"}]}`)),
			want: []want{inv(claimsField+"[0]", "exactly one of")}},
		{name: "S-V7_claim_with_neither_source", gate: true,
			set:  newStatefulSet(stsIntent(`{"schedulingPolicy":{"gang":{}},"resourceClaims":[{"name":"a","resourceClaimName":"x"},{"name":"b"}]}`)),
			want: []want{inv(claimsField+"[1]", "must specify one of")}},
		{name: "S-V7_more_than_4_claims", gate: true,
			set: newStatefulSet(stsIntent(`{"resourceClaims":[` +
				`{"name":"a","resourceClaimName":"a"},{"name":"b","resourceClaimName":"b"},{"name":"c","resourceClaimName":"c"},{"name":"d","resourceClaimName":"d"},{"name":"e","resourceClaimName":"e"}]}`)),
			want: []want{{field.ErrorTypeTooMany, claimsField, "at most 4"}}},
		{name: "S-V7_duplicate_claim_names", gate: true,
			set: newStatefulSet(stsIntent(`{"schedulingPolicy":{"gang":{}},"resourceClaims":[` +
				`{"name":"gpu","resourceClaimName":"a"},{"name":"nic","resourceClaimName":"b"},{"name":"gpu","resourceClaimTemplateName":"c"}]}`)),
			want: []want{{field.ErrorTypeDuplicate, claimsField + "[2].name", `"gpu"`}}},
		{name: "S-V7_claim_name_not_a_DNS_label", gate: true,
			set:  newStatefulSet(stsIntent(`{"resourceClaims":[{"name":"GPU_pool","resourceClaimName":"a"}]}`)),
			want: []want{inv(claimsField+"[0].name", "RFC 1123")}},
		{name: "S-V7_every_list_violation_at_once", gate: true,
			set: newStatefulSet(stsIntent(`{"resourceClaims":[` +
				`{"name":"a","resourceClaimName":"a","resourceClaimTemplateName":"a"},{"name":"a","resourceClaimName":"b"},{"name":"c"},{"name":"d","resourceClaimName":"d"},{"name":"e","resourceClaimName":"e"}]}`)),
			want: []want{
				{field.ErrorTypeTooMany, claimsField, ""}, {field.ErrorTypeDuplicate, claimsField + "[1].name", ""},
				inv(claimsField+"[0]", "exactly one of"), inv(claimsField+"[2]", "must specify one of"),
			}},

		// S-V8: warnings, never errors, for claims the pod template does not match.
		{name: "S-V8_missing_pod_template_claim_warns", gate: true, set: newStatefulSet(stsIntent(stsGangFull)),
			warnings: []string{missingClaimWarning(0, "gpu")}},
		{name: "S-V8_exact_warning_wording", gate: true, set: newStatefulSet(stsIntent(stsGangFull)),
			warnings: []string{`spec.scheduling.resourceClaims[0]: pod template has no matching spec.resourceClaims entry "gpu"; pods will not use the PodGroup's shared claim`}},
		{name: "S-V8_matching_pod_template_claim_no_warning", gate: true, set: newStatefulSet(stsIntent(stsGangFull), matchingClaims)},
		{name: "S-V8_same_name_other_template_warns", gate: true,
			set: newStatefulSet(stsIntent(stsGangFull), podClaims(podClaimFromName("nic", "x"), podClaimFromTemplate("gpu", "other-template"))),
			warnings: []string{missingClaimWarning(0, "gpu") +
				" (spec.template.spec.resourceClaims[1] has that name but refers to a different ResourceClaim or ResourceClaimTemplate)"}},
		{name: "S-V8_same_name_claim_instead_of_template_warns", gate: true,
			set: newStatefulSet(stsIntent(stsGangFull), podClaims(podClaimFromName("gpu", "gpu-template"))),
			warnings: []string{missingClaimWarning(0, "gpu") +
				" (spec.template.spec.resourceClaims[0] has that name but refers to a different ResourceClaim or ResourceClaimTemplate)"}},
		{name: "S-V8_same_source_other_name_warns", gate: true,
			set:      newStatefulSet(stsIntent(stsGangFull), podClaims(podClaimFromTemplate("accelerator", "gpu-template"))),
			warnings: []string{missingClaimWarning(0, "gpu")}},
		{name: "S-V8_one_of_two_claims_unmatched_warns_for_it_only", gate: true,
			set:      newStatefulSet(stsIntent(stsBasicShared), podClaims(podClaimFromTemplate("gpu", "gpu-template"))),
			warnings: []string{missingClaimWarning(1, "nic")}},
		{name: "S-V8_both_claims_unmatched_two_warnings", gate: true,
			set:      newStatefulSet(stsIntent(stsBasicShared), podManagement(appsv1.OrderedReadyPodManagement)),
			warnings: []string{missingClaimWarning(0, "gpu"), missingClaimWarning(1, "nic")}},
		{name: "S-V8_no_scheduling_claims_no_warning", gate: true, set: newStatefulSet(stsIntent(stsGang), podClaims(podClaimFromName("scratch", "s")))},
		{name: "S-V8_no_intent_no_warning", gate: true, set: newStatefulSet(podClaims())},
		{name: "S-V8_no_warning_when_rejected", gate: true, set: newStatefulSet(stsIntent(stsGangFull), partition(1)),
			want: []want{forb(partitionField, "")}},

		// S-P1: the gate is off.
		{name: "S-P1_gate_off_rejects_intent", set: newStatefulSet(stsIntent(stsGang)),
			want: []want{forb(schedulingField, stsGateDetail)}},
		{name: "S-P1_gate_off_rejects_empty_scheduling", set: newStatefulSet(stsIntent(`{}`)),
			want: []want{forb(schedulingField, stsGateDetail+"; remove the annotation or enable the gate")}},
		{name: "S-P1_gate_off_rejects_otherwise_invalid_intent_once",
			set:  newStatefulSet(stsIntent(stsGangMinCount), podManagement(appsv1.OrderedReadyPodManagement), partition(1)),
			want: []want{forb(schedulingField, intent.StatefulSetAnnotation)}},
		{name: "S-P1_gate_off_no_warnings_with_the_rejection", set: newStatefulSet(stsIntent(stsGangFull)),
			want: []want{forb(schedulingField, stsGateDetail)}},
		{name: "S-P1_gate_off_malformed_annotation_reported_as_such", set: newStatefulSet(stsIntent(`{`)),
			want: []want{inv(stsAnnotationField, "not a valid spec.scheduling")}},
		{name: "S-P1_gate_off_StatefulSet_without_intent_unaffected", set: newStatefulSet(podManagement(appsv1.OrderedReadyPodManagement), partition(2))},
	})
}

func TestValidateStatefulSetUpdate(t *testing.T) {
	runUpdate(t, []stsCase{
		// S-V6: the whole spec.scheduling is immutable.
		{name: "S-V6_add_after_create", gate: true, old: newStatefulSet(), set: newStatefulSet(stsIntent(stsGang)),
			want: []want{inv(schedulingField, "field is immutable")}, exact: []string{immutableMsg}},
		{name: "S-V6_add_empty_scheduling_after_create", gate: true, old: newStatefulSet(), set: newStatefulSet(stsIntent(`{}`)),
			want: []want{inv(schedulingField, "field is immutable")}},
		{name: "S-V6_unset", gate: true, old: newStatefulSet(stsIntent(stsGang)), set: newStatefulSet(),
			want: []want{inv(schedulingField, "field is immutable")}, exact: []string{immutableMsg}},
		{name: "S-V6_unset_empty_scheduling", gate: true, old: newStatefulSet(stsIntent(`{}`)), set: newStatefulSet(),
			want: []want{inv(schedulingField, "field is immutable")}},
		{name: "S-V6_basic_to_gang", gate: true, old: newStatefulSet(stsIntent(stsBasic)), set: newStatefulSet(stsIntent(stsGang)),
			want: []want{inv(schedulingField, "field is immutable")}},
		{name: "S-V6_gang_to_basic", gate: true, old: newStatefulSet(stsIntent(stsGang)), set: newStatefulSet(stsIntent(stsBasic)),
			want: []want{inv(schedulingField, "field is immutable")}},
		{name: "S-V6_omitted_policy_to_basic", gate: true, old: newStatefulSet(stsIntent(`{}`)), set: newStatefulSet(stsIntent(stsBasic)),
			want: []want{inv(schedulingField, "field is immutable")}},
		{name: "S-V6_resourceClaims_source_edit", gate: true, old: newStatefulSet(stsIntent(stsGangFull), matchingClaims),
			set:  newStatefulSet(stsIntent(strings.Replace(stsGangFull, `"resourceClaimTemplateName":"gpu-template"`, `"resourceClaimName":"gpu"`, 1)), matchingClaims),
			want: []want{inv(schedulingField, "field is immutable")}},
		{name: "S-V6_resourceClaims_entry_added", gate: true, old: newStatefulSet(stsIntent(stsGang)),
			set:  newStatefulSet(stsIntent(`{"schedulingPolicy":{"gang":{}},"resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"gpu-template"}]}`), matchingClaims),
			want: []want{inv(schedulingField, "field is immutable")}},
		{name: "S-V6_resourceClaims_removed", gate: true, old: newStatefulSet(stsIntent(stsBasicShared), matchingClaims),
			set:  newStatefulSet(stsIntent(`{"schedulingPolicy":{"basic":{}},"schedulingConstraints":{"topology":[{"key":"topology.kubernetes.io/zone"}]}}`), matchingClaims),
			want: []want{inv(schedulingField, "field is immutable")}},
		{name: "S-V6_resourceClaims_reordered", gate: true, old: newStatefulSet(stsIntent(stsBasicShared), matchingClaims),
			set: newStatefulSet(stsIntent(`{"schedulingPolicy":{"basic":{}},"schedulingConstraints":{"topology":[{"key":"topology.kubernetes.io/zone"}]},`+
				`"resourceClaims":[{"name":"nic","resourceClaimName":"shared-nic"},{"name":"gpu","resourceClaimTemplateName":"gpu-template"}]}`), matchingClaims),
			want: []want{inv(schedulingField, "field is immutable")}},
		{name: "S-V6_topology_constraint_edit", gate: true, old: newStatefulSet(stsIntent(stsGangFull), matchingClaims),
			set:  newStatefulSet(stsIntent(strings.Replace(stsGangFull, "topology.kubernetes.io/rack", "topology.kubernetes.io/zone", 1)), matchingClaims),
			want: []want{inv(schedulingField, "field is immutable")}},
		{name: "S-V6_disruptionMode_edit", gate: true, old: newStatefulSet(stsIntent(stsGangFull), matchingClaims),
			set:  newStatefulSet(stsIntent(strings.Replace(stsGangFull, `"all":{}`, `"single":{}`, 1)), matchingClaims),
			want: []want{inv(schedulingField, "field is immutable")}},
		{name: "S-V6_minCount_added_is_only_immutable", gate: true, old: newStatefulSet(stsIntent(stsGang)), set: newStatefulSet(stsIntent(stsGangMinCount)),
			want: []want{inv(schedulingField, "field is immutable")}},
		{name: "S-V6_change_to_an_invalid_value_is_only_immutable", gate: true,
			old:  newStatefulSet(stsIntent(stsBasic), podManagement(appsv1.OrderedReadyPodManagement)),
			set:  newStatefulSet(stsIntent(`{"schedulingPolicy":{"basic":{}},"disruptionMode":{"all":{}}}`), podManagement(appsv1.OrderedReadyPodManagement)),
			want: []want{inv(schedulingField, "field is immutable")}},
		{name: "S-V6_every_field_at_once_is_one_error", gate: true,
			old:  newStatefulSet(stsIntent(`{"schedulingPolicy":{"gang":{}},"schedulingConstraints":{"topology":[{"key":"a"}]},"disruptionMode":{"single":{}},"resourceClaims":[{"name":"a","resourceClaimName":"a"}]}`)),
			set:  newStatefulSet(stsIntent(`{"schedulingPolicy":{"basic":{}},"schedulingConstraints":{"topology":[{"key":"b"}]},"disruptionMode":{"all":{}},"resourceClaims":[{"name":"b","resourceClaimName":"b"}]}`)),
			want: []want{inv(schedulingField, "field is immutable")}},
		{name: "S-V6_replacing_a_malformed_stored_annotation_is_adding", gate: true,
			old: newStatefulSet(stsIntent(`{not json`)), set: newStatefulSet(stsIntent(stsGang)),
			want: []want{inv(schedulingField, "field is immutable")}},
		{name: "S-V6_removing_a_malformed_stored_annotation", gate: true, old: newStatefulSet(stsIntent(`{not json`)), set: newStatefulSet()},
		{name: "S-V6_malformed_new_annotation", gate: true, old: newStatefulSet(stsIntent(stsGang)), set: newStatefulSet(stsIntent(`{"schedulingPolicy":{"gang":{}},"minCount":2}`)),
			want: []want{inv(stsAnnotationField, `unknown field "minCount"`)}},
		// S-V6: what is not a change.
		{name: "S-V6_unchanged_with_image_change", gate: true, old: newStatefulSet(stsIntent(stsGangFull), matchingClaims),
			set: newStatefulSet(stsIntent(stsGangFull), matchingClaims, setImage("kv-store:v2"))},
		{name: "S-V6_unchanged_different_json_spelling", gate: true, old: newStatefulSet(stsIntent(stsGang)),
			set: newStatefulSet(stsIntent(` { "schedulingPolicy" : { "gang" : { } } } `))},
		{name: "S-V6_empty_resourceClaims_list_equals_omitted", gate: true, old: newStatefulSet(stsIntent(stsGang)),
			set: newStatefulSet(stsIntent(`{"schedulingPolicy":{"gang":{}},"resourceClaims":[]}`))},
		{name: "S-V6_unchanged_gang_scaled", gate: true, old: newStatefulSet(stsIntent(stsGang)), set: newStatefulSet(stsIntent(stsGang), setReplicas(10))},
		{name: "S-V6_unchanged_gang_scaled_to_zero", gate: true, old: newStatefulSet(stsIntent(stsGang)), set: newStatefulSet(stsIntent(stsGang), setReplicas(0))},
		{name: "S-V6_no_intent_on_either_side", gate: true, old: newStatefulSet(), set: newStatefulSet(podManagement(appsv1.OrderedReadyPodManagement), partition(4))},
		{name: "S-V6_unchanged_stored_invalid_building_block_ratchets", gate: true,
			old: newStatefulSet(stsIntent(`{"resourceClaims":[{"name":"GPU_pool","resourceClaimName":"a"}]}`)),
			set: newStatefulSet(stsIntent(`{"resourceClaims":[{"name":"GPU_pool","resourceClaimName":"a"}]}`), setImage("v2"),
				podClaims(podClaimFromName("GPU_pool", "a")))},
		{name: "S-V6_nil_old_is_a_create", gate: true, old: nil, set: newStatefulSet(stsIntent(stsGang), partition(1)),
			want: []want{forb(partitionField, "")}},
		{name: "S-V6_nil_new", gate: true, old: newStatefulSet(stsIntent(stsGang)), set: nil},

		// S-V3: partition on update.
		{name: "S-V3_update_sets_partition_with_unchanged_scheduling", gate: true,
			old: newStatefulSet(stsIntent(stsGang)), set: newStatefulSet(stsIntent(stsGang), partition(2)),
			want: []want{forb(partitionField, "")}, exact: []string{partitionMsg}},
		{name: "S-V3_update_keeps_empty_scheduling_and_sets_partition", gate: true,
			old: newStatefulSet(stsIntent(`{}`), podManagement(appsv1.OrderedReadyPodManagement)), set: newStatefulSet(stsIntent(`{}`), podManagement(appsv1.OrderedReadyPodManagement), partition(1)),
			want: []want{forb(partitionField, "")}, exact: []string{partitionMsg}},
		{name: "S-V3_update_partition_back_to_0", gate: true,
			old: newStatefulSet(stsIntent(stsGang), partition(2)), set: newStatefulSet(stsIntent(stsGang), partition(0))},
		{name: "S-V3_update_partition_without_intent", gate: true, old: newStatefulSet(), set: newStatefulSet(partition(2))},
		{name: "S-V3_update_partition_and_removing_scheduling_is_only_immutable", gate: true,
			old: newStatefulSet(stsIntent(stsGang)), set: newStatefulSet(partition(2)),
			want: []want{inv(schedulingField, "field is immutable")}},

		// S-V8: warnings on update, only when spec changed.
		{name: "S-V8_update_dropping_the_pod_template_claim_warns", gate: true,
			old: newStatefulSet(stsIntent(stsGangFull), matchingClaims), set: newStatefulSet(stsIntent(stsGangFull)),
			warnings: []string{missingClaimWarning(0, "gpu")}},
		{name: "S-V8_update_other_spec_change_still_unmatched_warns", gate: true,
			old: newStatefulSet(stsIntent(stsGangFull)), set: newStatefulSet(stsIntent(stsGangFull), setReplicas(5)),
			warnings: []string{missingClaimWarning(0, "gpu")}},
		{name: "S-V8_update_metadata_only_no_warning", gate: true,
			old: newStatefulSet(stsIntent(stsGangFull)), set: newStatefulSet(stsIntent(stsGangFull), setLabel("tier", "db"))},
		{name: "S-V8_update_matching_claims_no_warning", gate: true,
			old: newStatefulSet(stsIntent(stsGangFull)), set: newStatefulSet(stsIntent(stsGangFull), matchingClaims)},

		// S-P1: the gate is off.
		{name: "S-P1_gate_off_unchanged_intent_ratchets",
			old: newStatefulSet(stsIntent(stsGangFull), matchingClaims), set: newStatefulSet(stsIntent(stsGangFull), matchingClaims, setImage("kv-store:v2"))},
		{name: "S-P1_gate_off_unchanged_intent_still_warns",
			old: newStatefulSet(stsIntent(stsGangFull)), set: newStatefulSet(stsIntent(stsGangFull), setImage("kv-store:v2")),
			warnings: []string{missingClaimWarning(0, "gpu")}},
		{name: "S-P1_gate_off_adding_rejected",
			old: newStatefulSet(), set: newStatefulSet(stsIntent(stsGang)),
			want: []want{forb(schedulingField, stsGateDetail), inv(schedulingField, "field is immutable")}},
		{name: "S-P1_gate_off_changing_rejected",
			old: newStatefulSet(stsIntent(stsGang)), set: newStatefulSet(stsIntent(`{"schedulingPolicy":{"gang":{}},"disruptionMode":{"all":{}}}`)),
			want: []want{forb(schedulingField, stsGateDetail), inv(schedulingField, "field is immutable")}},
		{name: "S-P1_gate_off_removing_is_still_immutable",
			old: newStatefulSet(stsIntent(stsGang)), set: newStatefulSet(),
			want: []want{inv(schedulingField, "field is immutable")}},
		{name: "S-P1_gate_off_unchanged_intent_partition_still_rejected",
			old: newStatefulSet(stsIntent(stsGang)), set: newStatefulSet(stsIntent(stsGang), partition(1)),
			want: []want{forb(partitionField, "")}, exact: []string{partitionMsg}},
		{name: "S-P1_gate_off_StatefulSet_without_intent_unaffected",
			old: newStatefulSet(), set: newStatefulSet(partition(1), setReplicas(0))},
	})
}

// TestValidateStatefulSetGateErrorNamesTheGate checks the gate error itself.
func TestValidateStatefulSetGateErrorNamesTheGate(t *testing.T) {
	t.Run("S-P1_gate_error_path_type_and_message", func(t *testing.T) {
		errs, warnings := ValidateStatefulSetCreate(newStatefulSet(stsIntent(stsGang)), false)
		if len(errs) != 1 || warnings != nil {
			t.Fatalf("errs %v warnings %q", errs, warnings)
		}
		e := errs[0]
		want := "spec.scheduling: Forbidden: spec.scheduling (annotation scheduling.was-harness.io/statefulset-scheduling) cannot be set: " +
			"the WorkloadWithStatefulSet feature gate is disabled; remove the annotation or enable the gate"
		if e.Type != field.ErrorTypeForbidden || e.Field != "spec.scheduling" || e.Error() != want {
			t.Errorf("got %s %s %q, want %q", e.Type, e.Field, e.Error(), want)
		}
	})
	t.Run("S-V6_immutable_error_has_DV_origin", func(t *testing.T) {
		errs, _ := ValidateStatefulSetUpdate(newStatefulSet(stsIntent(stsGang)), newStatefulSet(stsIntent(stsBasic)), true)
		if len(errs) != 1 || errs[0].Origin != "immutable" || errs[0].Error() != immutableMsg {
			t.Fatalf("got %#v", errs)
		}
	})
	t.Run("S-V7_too_many_claims_has_DV_origin", func(t *testing.T) {
		errs, _ := ValidateStatefulSetCreate(newStatefulSet(stsIntent(`{"resourceClaims":[`+
			`{"name":"a","resourceClaimName":"a"},{"name":"b","resourceClaimName":"b"},{"name":"c","resourceClaimName":"c"},{"name":"d","resourceClaimName":"d"},{"name":"e","resourceClaimName":"e"}]}`)), true)
		if len(errs) != 1 || errs[0].Origin != "maxItems" {
			t.Fatalf("got %#v", errs)
		}
	})
	t.Run("S-V2_minCount_is_never_written_back", func(t *testing.T) {
		set := newStatefulSet(stsIntent(stsGang))
		before := set.DeepCopy()
		if errs, _ := ValidateStatefulSetCreate(set, true); len(errs) != 0 {
			t.Fatal(errs)
		}
		if !reflect.DeepEqual(set, before) {
			t.Errorf("validation mutated the StatefulSet")
		}
	})
}
