package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

const reviewUID = types.UID("705ab4f5-6393-11e8-b7cc-42010a800002")

// server serves a Handler whose gate is gate and whose deployment store is
// stored (GetDeployment fails with getErr when set).
func server(t *testing.T, gate bool, stored map[string]*appsv1.Deployment, getErr error) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(Path, &Handler{
		GateEnabled: func() bool { return gate },
		GetDeployment: func(_ context.Context, namespace, name, _ string) (*appsv1.Deployment, error) {
			if getErr != nil {
				return nil, getErr
			}
			d, ok := stored[namespace+"/"+name]
			if !ok {
				return nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, name)
			}
			return d.DeepCopy(), nil
		},
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func raw(t *testing.T, obj any) runtime.RawExtension {
	t.Helper()
	if obj == nil {
		return runtime.RawExtension{}
	}
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: data}
}

func deploymentReview(t *testing.T, op admissionv1.Operation, obj, old *appsv1.Deployment) []byte {
	t.Helper()
	req := &admissionv1.AdmissionRequest{
		UID:       reviewUID,
		Kind:      metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
		Resource:  metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		Name:      "inference-server",
		Namespace: "ml-serving",
		Operation: op,
		Object:    raw(t, obj),
	}
	if old != nil {
		req.OldObject = raw(t, old)
	}
	return review(t, req)
}

func scaleReview(t *testing.T, name string, replicas int32) []byte {
	t.Helper()
	scale := &autoscalingv1.Scale{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ml-serving"},
		Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
	}
	old := scale.DeepCopy()
	old.Spec.Replicas = 4
	return review(t, &admissionv1.AdmissionRequest{
		UID:         reviewUID,
		Kind:        metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"},
		Resource:    metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		SubResource: "scale",
		Name:        name,
		Namespace:   "ml-serving",
		Operation:   admissionv1.Update,
		Object:      raw(t, scale),
		OldObject:   raw(t, old),
	})
}

func review(t *testing.T, req *admissionv1.AdmissionRequest) []byte {
	t.Helper()
	data, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// post sends body and decodes the AdmissionReview answer; it fails the test
// on anything but HTTP 200.
func post(t *testing.T, srv *httptest.Server, body []byte) *admissionv1.AdmissionResponse {
	t.Helper()
	code, data := postRaw(t, srv, http.MethodPost, body)
	if code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", code, data)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal([]byte(data), &out); err != nil {
		t.Fatalf("response is not JSON: %v: %s", err, data)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response == nil {
		t.Fatalf("response is not an admission.k8s.io/v1 AdmissionReview with a response: %s", data)
	}
	if out.Response.UID != reviewUID {
		t.Errorf("response.uid = %q, want the request uid %q", out.Response.UID, reviewUID)
	}
	return out.Response
}

func postRaw(t *testing.T, srv *httptest.Server, method string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+Path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

func expectAllowed(t *testing.T, resp *admissionv1.AdmissionResponse) {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("denied, want allowed: %+v", resp.Result)
	}
}

// expectInvalid asserts a 422 Invalid denial whose message and causes list
// exactly the wanted errors.
func expectInvalid(t *testing.T, resp *admissionv1.AdmissionResponse, wants ...want) {
	t.Helper()
	if resp.Allowed {
		t.Fatal("allowed, want denied")
	}
	st := resp.Result
	if st == nil || st.Code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid || st.Status != metav1.StatusFailure {
		t.Fatalf("result = %+v, want Failure/Invalid/422", st)
	}
	if !strings.HasPrefix(st.Message, `Deployment.apps "inference-server" is invalid: `) {
		t.Errorf("message %q does not start like the apiserver's", st.Message)
	}
	if st.Details == nil || st.Details.Kind != "Deployment" || st.Details.Group != "apps" || st.Details.Name != "inference-server" {
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
		// The message lists each error as "<field>: <type>...: <detail>".
		if line := fmt.Sprintf("%s: %s", w.field, w.typ); !strings.Contains(st.Message, line) {
			t.Errorf("message %q does not list %q", st.Message, line)
		}
	}
}

func TestWebhookDeployment(t *testing.T) {
	srv := server(t, true, nil, nil)

	t.Run("D-U4_create_KEP_Example_1_allowed", func(t *testing.T) {
		expectAllowed(t, post(t, srv, deploymentReview(t, admissionv1.Create, newDeployment(annotation(example1)), nil)))
	})
	t.Run("D-U4_create_without_intent_allowed", func(t *testing.T) {
		expectAllowed(t, post(t, srv, deploymentReview(t, admissionv1.Create, newDeployment(strategy(appsv1.RollingUpdateDeploymentStrategyType)), nil)))
	})
	t.Run("D-U4_create_minCount_above_replicas_denied", func(t *testing.T) {
		resp := post(t, srv, deploymentReview(t, admissionv1.Create, newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":5}}}`)), nil))
		expectInvalid(t, resp, inv(minCountField, "must not exceed spec.replicas (3)"))
		if want := `spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 5: must not exceed spec.replicas (3)`; !strings.Contains(resp.Result.Message, want) {
			t.Errorf("message %q does not contain %q", resp.Result.Message, want)
		}
	})
	t.Run("D-E2_create_RollingUpdate_gang_and_minCount_above_replicas_denied", func(t *testing.T) {
		d := newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":4}}}`), strategy(appsv1.RollingUpdateDeploymentStrategyType))
		resp := post(t, srv, deploymentReview(t, admissionv1.Create, d, nil))
		expectInvalid(t, resp, forb(gangField, "Recreate"), inv(minCountField, "must not exceed spec.replicas (3)"))
		if !strings.Contains(resp.Result.Message, "is invalid: [") {
			t.Errorf("two errors should be listed as an aggregate: %q", resp.Result.Message)
		}
	})
	t.Run("D-U4_unknown_field_in_annotation_denied_with_the_field_named", func(t *testing.T) {
		d := newDeployment(annotation(`{"schedulingPolicy":{"gang":{}},"topologyKey":"zone"}`))
		resp := post(t, srv, deploymentReview(t, admissionv1.Create, d, nil))
		expectInvalid(t, resp, inv(annotationField, `unknown field "topologyKey"`))
	})
	t.Run("D-V1_create_with_template_schedulingGroup_denied", func(t *testing.T) {
		resp := post(t, srv, deploymentReview(t, admissionv1.Create, newDeployment(annotation(example1), schedulingGroup), nil))
		expectInvalid(t, resp, forb(schedulingField, "spec.template.spec.schedulingGroup"))
	})
	t.Run("D-V2_update_minCount_within_replicas_allowed", func(t *testing.T) {
		old := newDeployment(annotation(example2), replicas(4))
		expectAllowed(t, post(t, srv, deploymentReview(t, admissionv1.Update,
			newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":4}}}`), replicas(4)), old)))
	})
	t.Run("D-V2_update_immutable_disruptionMode_denied", func(t *testing.T) {
		old := newDeployment(annotation(example1))
		d := newDeployment(annotation(`{"schedulingPolicy":{"gang":{}},"schedulingConstraints":{"topology":[{"key":"topology.kubernetes.io/zone"}]},"disruptionMode":{"single":{}}}`))
		expectInvalid(t, post(t, srv, deploymentReview(t, admissionv1.Update, d, old)), inv(disruptionField, "field is immutable"))
	})
	t.Run("D-V2_update_adding_scheduling_denied", func(t *testing.T) {
		expectInvalid(t, post(t, srv, deploymentReview(t, admissionv1.Update, newDeployment(annotation(example1)), newDeployment())),
			forb(schedulingField, "cannot be added"))
	})
	t.Run("D-V3_update_replicas_below_explicit_minCount_denied", func(t *testing.T) {
		old := newDeployment(annotation(example2), replicas(4))
		expectInvalid(t, post(t, srv, deploymentReview(t, admissionv1.Update, newDeployment(annotation(example2), replicas(2)), old)),
			inv(replicasField, "floor"))
	})
	t.Run("D-U4_undecodable_object_denied_with_the_decode_error", func(t *testing.T) {
		body := review(t, &admissionv1.AdmissionRequest{
			UID:       reviewUID,
			Kind:      metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
			Resource:  metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: []byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":"three"}}`)},
		})
		resp := post(t, srv, body)
		if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest ||
			!strings.Contains(resp.Result.Message, "could not decode the Deployment in request.object") {
			t.Fatalf("want a 400 denial naming the decode error, got allowed=%v %+v", resp.Allowed, resp.Result)
		}
	})
	t.Run("D-U4_update_without_oldObject_denied", func(t *testing.T) {
		resp := post(t, srv, deploymentReview(t, admissionv1.Update, newDeployment(annotation(example1)), nil))
		if resp.Allowed || !strings.Contains(resp.Result.Message, "request.oldObject") {
			t.Fatalf("want a denial naming oldObject, got allowed=%v %+v", resp.Allowed, resp.Result)
		}
	})
	t.Run("D-U4_other_kinds_and_operations_allowed", func(t *testing.T) {
		pod := review(t, &admissionv1.AdmissionRequest{
			UID:       reviewUID,
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: []byte(`{"apiVersion":"v1","kind":"Pod"}`)},
		})
		expectAllowed(t, post(t, srv, pod))
		bad := newDeployment(annotation(`{"schedulingPolicy":{"gang":{"minCount":9}}}`))
		expectAllowed(t, post(t, srv, deploymentReview(t, admissionv1.Delete, nil, bad)))
		status := review(t, &admissionv1.AdmissionRequest{
			UID:         reviewUID,
			Kind:        metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
			Resource:    metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
			SubResource: "status",
			Operation:   admissionv1.Update,
			Object:      raw(t, bad),
			OldObject:   raw(t, bad),
		})
		expectAllowed(t, post(t, srv, status))
	})
}

func TestWebhookFeatureGate(t *testing.T) {
	off := server(t, false, nil, nil)
	t.Run("D-P1_gate_off_create_with_intent_denied", func(t *testing.T) {
		expectInvalid(t, post(t, off, deploymentReview(t, admissionv1.Create, newDeployment(annotation(example1)), nil)),
			forb(schedulingField, "WorkloadWithDeployment feature gate is disabled"))
	})
	t.Run("D-P1_gate_off_create_without_intent_allowed", func(t *testing.T) {
		expectAllowed(t, post(t, off, deploymentReview(t, admissionv1.Create, newDeployment(), nil)))
	})
	t.Run("D-P1_gate_off_unchanged_intent_update_allowed", func(t *testing.T) {
		old := newDeployment(annotation(example1))
		expectAllowed(t, post(t, off, deploymentReview(t, admissionv1.Update, newDeployment(annotation(example1), image("v2")), old)))
	})
	t.Run("D-P1_nil_GateEnabled_means_off", func(t *testing.T) {
		srv := httptest.NewServer(&Handler{})
		t.Cleanup(srv.Close)
		code, data := postRaw(t, srv, http.MethodPost, deploymentReview(t, admissionv1.Create, newDeployment(annotation(example1)), nil))
		if code != http.StatusOK || !strings.Contains(data, `"allowed":false`) || !strings.Contains(data, "feature gate is disabled") {
			t.Fatalf("HTTP %d %s", code, data)
		}
	})
}

func TestWebhookScale(t *testing.T) {
	stored := map[string]*appsv1.Deployment{
		"ml-serving/inference-server": newDeployment(annotation(example2), replicas(4)),
		"ml-serving/derived":          newDeployment(annotation(example1)),
	}
	srv := server(t, true, stored, nil)

	t.Run("D-V3_scale_below_explicit_minCount_denied", func(t *testing.T) {
		resp := post(t, srv, scaleReview(t, "inference-server", 2))
		expectInvalid(t, resp, inv(replicasField, "must not be less than spec.scheduling.schedulingPolicy.gang.minCount (3)"))
	})
	t.Run("D-V3_scale_to_explicit_minCount_allowed", func(t *testing.T) {
		expectAllowed(t, post(t, srv, scaleReview(t, "inference-server", 3)))
	})
	t.Run("D-V3_scale_to_zero_allowed", func(t *testing.T) {
		expectAllowed(t, post(t, srv, scaleReview(t, "inference-server", 0)))
	})
	t.Run("D-V3_scale_without_explicit_minCount_allowed", func(t *testing.T) {
		expectAllowed(t, post(t, srv, scaleReview(t, "derived", 1)))
	})
	t.Run("D-V3_scale_of_missing_deployment_denied_fail_closed", func(t *testing.T) {
		resp := post(t, srv, scaleReview(t, "gone", 1))
		// The same answer as for any other failed read: whether a
		// Deployment exists is not the caller's to learn from the webhook.
		if resp.Allowed || resp.Result.Code != http.StatusInternalServerError || !strings.Contains(resp.Result.Message, "could not be read") ||
			strings.Contains(strings.ToLower(resp.Result.Message), "not found") {
			t.Fatalf("want a 500 denial saying only that the deployment could not be read, got allowed=%v %+v", resp.Allowed, resp.Result)
		}
	})
	t.Run("D-V3_scale_with_GetDeployment_error_denied_fail_closed", func(t *testing.T) {
		broken := server(t, true, stored, errors.New("connection refused"))
		resp := post(t, broken, scaleReview(t, "inference-server", 3))
		if resp.Allowed || resp.Result.Code != http.StatusInternalServerError ||
			!strings.Contains(resp.Result.Message, "deployment ml-serving/inference-server could not be read") ||
			strings.Contains(resp.Result.Message, "connection refused") {
			t.Fatalf("want a 500 denial saying the deployment could not be read, and not why, got allowed=%v %+v", resp.Allowed, resp.Result)
		}
	})
	t.Run("D-V3_scale_without_GetDeployment_denied_fail_closed", func(t *testing.T) {
		bare := httptest.NewServer(&Handler{GateEnabled: func() bool { return true }})
		t.Cleanup(bare.Close)
		code, data := postRaw(t, bare, http.MethodPost, scaleReview(t, "inference-server", 3))
		if code != http.StatusOK || !strings.Contains(data, `"allowed":false`) || !strings.Contains(data, "cannot read deployments") {
			t.Fatalf("HTTP %d %s", code, data)
		}
	})
	t.Run("D-V3_scale_with_undecodable_Scale_denied", func(t *testing.T) {
		body := review(t, &admissionv1.AdmissionRequest{
			UID:         reviewUID,
			Kind:        metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"},
			Resource:    metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
			SubResource: "scale",
			Name:        "inference-server",
			Namespace:   "ml-serving",
			Operation:   admissionv1.Update,
			Object:      runtime.RawExtension{Raw: []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","spec":{"replicas":true}}`)},
		})
		resp := post(t, srv, body)
		if resp.Allowed || resp.Result.Code != http.StatusBadRequest || !strings.Contains(resp.Result.Message, "could not decode the Scale") {
			t.Fatalf("got allowed=%v %+v", resp.Allowed, resp.Result)
		}
	})
}

func TestWebhookMalformedRequests(t *testing.T) {
	srv := server(t, true, nil, nil)
	cases := []struct {
		name   string
		method string
		body   string
		code   int
		says   string
	}{
		{name: "D-U4_body_not_json_400", method: http.MethodPost, body: `this is not json`, code: http.StatusBadRequest, says: "not an admission.k8s.io/v1 AdmissionReview"},
		{name: "D-U4_body_a_Deployment_400", method: http.MethodPost, body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"}}`,
			code: http.StatusBadRequest, says: `got apiVersion "apps/v1", kind "Deployment"`},
		{name: "D-U4_body_v1beta1_review_400", method: http.MethodPost, body: `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"1"}}`,
			code: http.StatusBadRequest, says: "not an admission.k8s.io/v1 AdmissionReview"},
		{name: "D-U4_review_without_request_400", method: http.MethodPost, body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`,
			code: http.StatusBadRequest, says: "no request"},
		{name: "D-U4_empty_body_400", method: http.MethodPost, body: ``, code: http.StatusBadRequest, says: "not an admission.k8s.io/v1 AdmissionReview"},
		{name: "D-U4_GET_405", method: http.MethodGet, body: ``, code: http.StatusMethodNotAllowed, says: "POST"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, data := postRaw(t, srv, tc.method, []byte(tc.body))
			if code != tc.code || !strings.Contains(data, tc.says) {
				t.Fatalf("HTTP %d %q, want %d mentioning %q", code, data, tc.code, tc.says)
			}
		})
	}

	// A literal AdmissionReview, as the apiserver sends it.
	t.Run("D-U4_literal_review_denied_with_uid", func(t *testing.T) {
		body := `{
  "kind": "AdmissionReview",
  "apiVersion": "admission.k8s.io/v1",
  "request": {
    "uid": "` + string(reviewUID) + `",
    "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
    "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
    "requestKind": {"group": "apps", "version": "v1", "kind": "Deployment"},
    "requestResource": {"group": "apps", "version": "v1", "resource": "deployments"},
    "name": "inference-server",
    "namespace": "ml-serving",
    "operation": "CREATE",
    "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
    "object": {
      "apiVersion": "apps/v1", "kind": "Deployment",
      "metadata": {"name": "inference-server", "namespace": "ml-serving",
        "annotations": {"scheduling.was-harness.io/deployment-scheduling": "{\"schedulingPolicy\":{\"gang\":{\"minCount\":2}},\"disruptionMode\":{\"all\":{}},\"bogus\":true}"}},
      "spec": {"replicas": 3, "strategy": {"type": "Recreate"},
        "selector": {"matchLabels": {"app": "inference-server"}},
        "template": {"metadata": {"labels": {"app": "inference-server"}},
          "spec": {"containers": [{"name": "server", "image": "inference-server:v1"}]}}}
    },
    "oldObject": null,
    "dryRun": false,
    "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
  }
}`
		expectInvalid(t, post(t, srv, []byte(body)), inv(annotationField, `unknown field "bogus"`))
	})
}
