package admission

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// stsServer serves a Handler with the two gates as given.
func stsServer(t *testing.T, deploymentGate, statefulSetGate bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(&Handler{
		GateEnabled:            func() bool { return deploymentGate },
		StatefulSetGateEnabled: func() bool { return statefulSetGate },
	})
	t.Cleanup(srv.Close)
	return srv
}

func statefulSetReview(t *testing.T, op admissionv1.Operation, obj, old *appsv1.StatefulSet) []byte {
	t.Helper()
	req := &admissionv1.AdmissionRequest{
		UID:       reviewUID,
		Kind:      metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"},
		Resource:  metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"},
		Name:      "kv-store",
		Namespace: "databases",
		Operation: op,
	}
	if obj != nil {
		req.Object = raw(t, obj)
	}
	if old != nil {
		req.OldObject = raw(t, old)
	}
	return review(t, req)
}

// expectStatefulSetInvalid asserts a 422 Invalid denial for the StatefulSet
// whose causes are exactly the wanted (type, field) pairs, and that the
// aggregated message contains each of exact verbatim.
func expectStatefulSetInvalid(t *testing.T, resp *admissionv1.AdmissionResponse, exact []string, wants ...want) {
	t.Helper()
	if resp.Allowed {
		t.Fatal("allowed, want denied")
	}
	st := resp.Result
	if st == nil || st.Code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid || st.Status != metav1.StatusFailure {
		t.Fatalf("result = %+v, want Failure/Invalid/422", st)
	}
	if !strings.HasPrefix(st.Message, `StatefulSet.apps "kv-store" is invalid: `) {
		t.Errorf("message %q does not start like the apiserver's", st.Message)
	}
	if st.Details == nil || st.Details.Kind != "StatefulSet" || st.Details.Group != "apps" || st.Details.Name != "kv-store" {
		t.Fatalf("details = %+v", st.Details)
	}
	if len(st.Details.Causes) != len(wants) {
		t.Fatalf("causes = %+v, want %d", st.Details.Causes, len(wants))
	}
	for _, w := range wants {
		found := false
		for _, c := range st.Details.Causes {
			if string(c.Type) == string(w.typ) && c.Field == w.field && strings.Contains(c.Message, w.detail) {
				found = true
			}
		}
		if !found {
			t.Errorf("no cause %s @ %s mentioning %q in %+v", w.typ, w.field, w.detail, st.Details.Causes)
		}
	}
	for _, m := range exact {
		if !strings.Contains(st.Message, m) {
			t.Errorf("message %q does not contain %q", st.Message, m)
		}
	}
}

func TestWebhookStatefulSet(t *testing.T) {
	srv := stsServer(t, false, true)

	t.Run("S-V5_create_Parallel_gang_allowed_without_warnings", func(t *testing.T) {
		resp := post(t, srv, statefulSetReview(t, admissionv1.Create, newStatefulSet(stsIntent(stsGangFull), matchingClaims), nil))
		expectAllowed(t, resp)
		if len(resp.Warnings) != 0 {
			t.Errorf("warnings = %q, want none", resp.Warnings)
		}
	})
	t.Run("S-V5_create_OrderedReady_basic_with_topology_and_claims_allowed", func(t *testing.T) {
		s := newStatefulSet(stsIntent(stsBasicShared), podManagement(appsv1.OrderedReadyPodManagement), matchingClaims)
		expectAllowed(t, post(t, srv, statefulSetReview(t, admissionv1.Create, s, nil)))
	})
	t.Run("S-V1_create_OrderedReady_gang_denied_with_the_KEP_message", func(t *testing.T) {
		s := newStatefulSet(stsIntent(stsGang), podManagement(appsv1.OrderedReadyPodManagement))
		resp := post(t, srv, statefulSetReview(t, admissionv1.Create, s, nil))
		expectStatefulSetInvalid(t, resp, []string{`StatefulSet.apps "kv-store" is invalid: ` + gangNeedsParallelMsg},
			forb(gangField, "gang scheduling requires podManagementPolicy: Parallel; OrderedReady creates pods sequentially, which can never satisfy a gang"))
	})
	t.Run("S-V2_create_user_minCount_denied", func(t *testing.T) {
		resp := post(t, srv, statefulSetReview(t, admissionv1.Create, newStatefulSet(stsIntent(stsGangMinCount)), nil))
		expectStatefulSetInvalid(t, resp, nil, forb(minCountField, "must not be set"))
	})
	t.Run("S-V3_update_setting_partition_denied_with_the_KEP_message", func(t *testing.T) {
		old := newStatefulSet(stsIntent(stsGang))
		resp := post(t, srv, statefulSetReview(t, admissionv1.Update, newStatefulSet(stsIntent(stsGang), partition(1)), old))
		expectStatefulSetInvalid(t, resp, []string{partitionMsg}, forb(partitionField, "partitioned rollouts are not supported"))
	})
	t.Run("S-V3_S-V1_create_two_errors_aggregated", func(t *testing.T) {
		s := newStatefulSet(stsIntent(stsGang), podManagement(""), partition(2))
		resp := post(t, srv, statefulSetReview(t, admissionv1.Create, s, nil))
		expectStatefulSetInvalid(t, resp, []string{gangNeedsParallelMsg, partitionMsg, "is invalid: ["}, forb(gangField, ""), forb(partitionField, ""))
	})
	t.Run("S-V4_create_basic_all_denied", func(t *testing.T) {
		s := newStatefulSet(stsIntent(`{"schedulingPolicy":{"basic":{}},"disruptionMode":{"all":{}}}`))
		expectStatefulSetInvalid(t, post(t, srv, statefulSetReview(t, admissionv1.Create, s, nil)), nil, inv(disruptionField, "Basic"))
	})
	t.Run("S-V6_update_basic_to_gang_denied_as_immutable", func(t *testing.T) {
		old := newStatefulSet(stsIntent(stsBasic))
		resp := post(t, srv, statefulSetReview(t, admissionv1.Update, newStatefulSet(stsIntent(stsGang)), old))
		expectStatefulSetInvalid(t, resp, []string{immutableMsg}, inv(schedulingField, "field is immutable"))
	})
	t.Run("S-V7_create_too_many_claims_denied", func(t *testing.T) {
		s := newStatefulSet(stsIntent(`{"resourceClaims":[` +
			`{"name":"a","resourceClaimName":"a"},{"name":"b","resourceClaimName":"b"},{"name":"c","resourceClaimName":"c"},{"name":"d","resourceClaimName":"d"},{"name":"e","resourceClaimName":"e"}]}`))
		expectStatefulSetInvalid(t, post(t, srv, statefulSetReview(t, admissionv1.Create, s, nil)), nil, want{field.ErrorTypeTooMany, claimsField, "at most 4"})
	})
	t.Run("S-V8_create_warning_in_response", func(t *testing.T) {
		resp := post(t, srv, statefulSetReview(t, admissionv1.Create, newStatefulSet(stsIntent(stsBasicShared), podClaims(podClaimFromName("nic", "shared-nic"))), nil))
		expectAllowed(t, resp)
		if want := []string{missingClaimWarning(0, "gpu")}; !reflect.DeepEqual(resp.Warnings, want) {
			t.Errorf("warnings = %q, want %q", resp.Warnings, want)
		}
	})
	t.Run("S-V8_update_warning_in_response", func(t *testing.T) {
		old := newStatefulSet(stsIntent(stsGangFull), matchingClaims)
		resp := post(t, srv, statefulSetReview(t, admissionv1.Update, newStatefulSet(stsIntent(stsGangFull), setImage("v2")), old))
		expectAllowed(t, resp)
		if want := []string{missingClaimWarning(0, "gpu")}; !reflect.DeepEqual(resp.Warnings, want) {
			t.Errorf("warnings = %q, want %q", resp.Warnings, want)
		}
	})
	t.Run("S-V5_undecodable_StatefulSet_denied_with_the_decode_error", func(t *testing.T) {
		body := review(t, &admissionv1.AdmissionRequest{
			UID:       reviewUID,
			Kind:      metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"},
			Resource:  metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"},
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: []byte(`{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"replicas":"three"}}`)},
		})
		resp := post(t, srv, body)
		if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest ||
			!strings.Contains(resp.Result.Message, "could not decode the StatefulSet in request.object") {
			t.Fatalf("want a 400 denial naming the decode error, got allowed=%v %+v", resp.Allowed, resp.Result)
		}
	})
	t.Run("S-V5_object_of_the_wrong_kind_denied", func(t *testing.T) {
		body := review(t, &admissionv1.AdmissionRequest{
			UID:       reviewUID,
			Kind:      metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"},
			Resource:  metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"},
			Operation: admissionv1.Create,
			Object:    raw(t, newDeployment()),
		})
		resp := post(t, srv, body)
		if resp.Allowed || resp.Result.Code != http.StatusBadRequest || !strings.Contains(resp.Result.Message, "want apps/v1, Kind=StatefulSet") {
			t.Fatalf("got allowed=%v %+v", resp.Allowed, resp.Result)
		}
	})
	t.Run("S-V6_update_without_oldObject_denied", func(t *testing.T) {
		resp := post(t, srv, statefulSetReview(t, admissionv1.Update, newStatefulSet(stsIntent(stsGang)), nil))
		if resp.Allowed || !strings.Contains(resp.Result.Message, "could not decode the StatefulSet in request.oldObject") {
			t.Fatalf("want a denial naming oldObject, got allowed=%v %+v", resp.Allowed, resp.Result)
		}
	})
	t.Run("S-V5_other_operations_and_subresources_allowed", func(t *testing.T) {
		bad := newStatefulSet(stsIntent(stsGangMinCount), podManagement(""), partition(3))
		expectAllowed(t, post(t, srv, statefulSetReview(t, admissionv1.Delete, nil, bad)))
		for _, sub := range []string{"status", "scale"} {
			body := review(t, &admissionv1.AdmissionRequest{
				UID:         reviewUID,
				Kind:        metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"},
				Resource:    metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"},
				SubResource: sub,
				Operation:   admissionv1.Update,
				Object:      raw(t, bad),
				OldObject:   raw(t, bad),
			})
			expectAllowed(t, post(t, srv, body))
		}
	})
}

func TestWebhookStatefulSetFeatureGate(t *testing.T) {
	t.Run("S-P1_gate_off_create_with_intent_denied", func(t *testing.T) {
		srv := stsServer(t, true, false)
		resp := post(t, srv, statefulSetReview(t, admissionv1.Create, newStatefulSet(stsIntent(stsGang)), nil))
		expectStatefulSetInvalid(t, resp, []string{"spec.scheduling: Forbidden: "}, forb(schedulingField, stsGateDetail))
	})
	t.Run("S-P1_gate_off_update_adding_denied_with_gate_and_immutable", func(t *testing.T) {
		srv := stsServer(t, true, false)
		resp := post(t, srv, statefulSetReview(t, admissionv1.Update, newStatefulSet(stsIntent(stsGang)), newStatefulSet()))
		expectStatefulSetInvalid(t, resp, nil, forb(schedulingField, stsGateDetail), inv(schedulingField, "field is immutable"))
	})
	t.Run("S-P1_gate_off_unchanged_intent_update_allowed", func(t *testing.T) {
		srv := stsServer(t, false, false)
		old := newStatefulSet(stsIntent(stsGang))
		expectAllowed(t, post(t, srv, statefulSetReview(t, admissionv1.Update, newStatefulSet(stsIntent(stsGang), setReplicas(7)), old)))
	})
	t.Run("S-P1_gate_off_create_without_intent_allowed", func(t *testing.T) {
		srv := stsServer(t, false, false)
		expectAllowed(t, post(t, srv, statefulSetReview(t, admissionv1.Create, newStatefulSet(podManagement(""), partition(2)), nil)))
	})
	t.Run("S-P1_nil_StatefulSetGateEnabled_means_off", func(t *testing.T) {
		srv := httptest.NewServer(&Handler{GateEnabled: func() bool { return true }})
		t.Cleanup(srv.Close)
		code, data := postRaw(t, srv, http.MethodPost, statefulSetReview(t, admissionv1.Create, newStatefulSet(stsIntent(stsGang)), nil))
		if code != http.StatusOK || !strings.Contains(data, `"allowed":false`) || !strings.Contains(data, "WorkloadWithStatefulSet feature gate is disabled") {
			t.Fatalf("HTTP %d %s", code, data)
		}
	})
	t.Run("S-P1_the_two_gates_are_independent", func(t *testing.T) {
		srv := stsServer(t, false, true)
		expectAllowed(t, post(t, srv, statefulSetReview(t, admissionv1.Create, newStatefulSet(stsIntent(stsGang)), nil)))
		expectInvalid(t, post(t, srv, deploymentReview(t, admissionv1.Create, newDeployment(annotation(example1)), nil)),
			forb(schedulingField, "WorkloadWithDeployment feature gate is disabled"))

		srv = stsServer(t, true, false)
		expectAllowed(t, post(t, srv, deploymentReview(t, admissionv1.Create, newDeployment(annotation(example1)), nil)))
		expectStatefulSetInvalid(t, post(t, srv, statefulSetReview(t, admissionv1.Create, newStatefulSet(stsIntent(stsGang)), nil)),
			nil, forb(schedulingField, stsGateDetail))
	})
}

// TestWebhookStatefulSetLiteralReview round-trips literal AdmissionReview
// JSON, as the apiserver sends it, and checks the literal response.
func TestWebhookStatefulSetLiteralReview(t *testing.T) {
	srv := stsServer(t, false, true)
	literal := func(annotation, podManagementPolicy string, partition int) string {
		return `{
  "kind": "AdmissionReview",
  "apiVersion": "admission.k8s.io/v1",
  "request": {
    "uid": "` + string(reviewUID) + `",
    "kind": {"group": "apps", "version": "v1", "kind": "StatefulSet"},
    "resource": {"group": "apps", "version": "v1", "resource": "statefulsets"},
    "requestKind": {"group": "apps", "version": "v1", "kind": "StatefulSet"},
    "requestResource": {"group": "apps", "version": "v1", "resource": "statefulsets"},
    "name": "kv-store",
    "namespace": "databases",
    "operation": "CREATE",
    "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
    "object": {
      "apiVersion": "apps/v1", "kind": "StatefulSet",
      "metadata": {"name": "kv-store", "namespace": "databases",
        "annotations": {"scheduling.was-harness.io/statefulset-scheduling": ` + annotation + `}},
      "spec": {"replicas": 3, "serviceName": "kv-store", "podManagementPolicy": "` + podManagementPolicy + `",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": ` + strconv.Itoa(partition) + `}},
        "selector": {"matchLabels": {"app": "kv-store"}},
        "template": {"metadata": {"labels": {"app": "kv-store"}},
          "spec": {"containers": [{"name": "db", "image": "kv-store:v1"}],
            "resourceClaims": [{"name": "nic", "resourceClaimName": "shared-nic"}]}}}
    },
    "oldObject": null,
    "dryRun": false,
    "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
  }
}`
	}
	const claims = `"{\"schedulingPolicy\":{\"gang\":{}},\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"gpu-template\"},{\"name\":\"nic\",\"resourceClaimName\":\"shared-nic\"}]}"`

	t.Run("S-V8_literal_review_allowed_with_a_warning", func(t *testing.T) {
		code, data := postRaw(t, srv, http.MethodPost, []byte(literal(claims, "Parallel", 0)))
		if code != http.StatusOK {
			t.Fatalf("HTTP %d %s", code, data)
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(data), &out); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		resp, _ := out["response"].(map[string]any)
		if out["apiVersion"] != "admission.k8s.io/v1" || out["kind"] != "AdmissionReview" || resp == nil ||
			resp["uid"] != string(reviewUID) || resp["allowed"] != true {
			t.Fatalf("response %s", data)
		}
		warnings, _ := resp["warnings"].([]any)
		want := `spec.scheduling.resourceClaims[0]: pod template has no matching spec.resourceClaims entry "gpu"; pods will not use the PodGroup's shared claim`
		if len(warnings) != 1 || warnings[0] != want {
			t.Fatalf("response.warnings = %v, want [%q]; response %s", warnings, want, data)
		}
	})
	t.Run("S-V1_literal_review_denied", func(t *testing.T) {
		resp := post(t, srv, []byte(literal(claims, "OrderedReady", 0)))
		expectStatefulSetInvalid(t, resp, []string{gangNeedsParallelMsg}, forb(gangField, ""))
		if len(resp.Warnings) != 0 {
			t.Errorf("warnings %q with a denial", resp.Warnings)
		}
	})
	t.Run("S-V3_literal_review_denied", func(t *testing.T) {
		resp := post(t, srv, []byte(literal(`"{}"`, "OrderedReady", 1)))
		expectStatefulSetInvalid(t, resp, []string{partitionMsg}, forb(partitionField, ""))
	})
	t.Run("S-V5_literal_review_malformed_annotation_denied", func(t *testing.T) {
		resp := post(t, srv, []byte(literal(`"{\"schedulingPolicy\":{\"gang\":{}},\"bogus\":true}"`, "Parallel", 0)))
		expectStatefulSetInvalid(t, resp, nil, inv(stsAnnotationField, `unknown field "bogus"`))
	})
}
