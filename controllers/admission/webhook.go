package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Path is where the webhook is served; register it in a
// ValidatingWebhookConfiguration for apps/v1 deployments (CREATE, UPDATE) and
// deployments/scale (UPDATE), with admissionReviewVersions ["v1"].
const Path = "/validate-apps-v1-deployment"

// maxBodyBytes bounds an AdmissionReview body (the apiserver's own request
// limit is 3 MiB per object; a review carries two objects).
const maxBodyBytes = 16 << 20

var (
	deploymentKind   = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	deploymentsGVR   = metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	deploymentGK     = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	reviewGVK        = admissionv1.SchemeGroupVersion.WithKind("AdmissionReview")
	objectDecoder    runtime.Decoder
	deploymentGVK    = appsv1.SchemeGroupVersion.WithKind("Deployment")
	autoscalingScale = autoscalingv1.SchemeGroupVersion.WithKind("Scale")
)

func init() {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := autoscalingv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	objectDecoder = serializer.NewCodecFactory(scheme).UniversalDeserializer()
}

// Handler is the validating admission webhook for Deployments. It serves
// admission.k8s.io/v1 AdmissionReview requests:
//
//   - apps/v1 Deployment CREATE and UPDATE run ValidateCreate and ValidateUpdate;
//   - UPDATE of the deployments/scale subresource (an autoscaling/v1 Scale)
//     reads the stored Deployment with GetDeployment and runs ValidateScale;
//   - anything else is allowed.
//
// Rejections are answered the way the apiserver reports a validation
// failure: allowed false, code 422, reason Invalid, the aggregated message and
// one cause per error.
type Handler struct {
	// GateEnabled reports the WorkloadWithDeployment feature gate. A nil
	// GateEnabled means the gate is off (its default).
	GateEnabled func() bool
	// GetDeployment reads a Deployment for /scale requests, which carry only
	// the Scale. If it fails (or is nil), the scale request is denied: the
	// webhook fails closed rather than let a scale below an explicit minCount
	// through unchecked.
	GetDeployment func(ctx context.Context, namespace, name string) (*appsv1.Deployment, error)
}

var _ http.Handler = &Handler{}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, fmt.Sprintf("method %s not allowed: POST an admission.k8s.io/v1 AdmissionReview", r.Method), http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		http.Error(w, fmt.Sprintf("could not read the request body: %v", err), http.StatusBadRequest)
		return
	}
	review, err := decodeReview(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}

	resp := h.review(r.Context(), review.Request)
	resp.UID = review.Request.UID
	out := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: reviewGVK.GroupVersion().String(), Kind: reviewGVK.Kind},
		Response: resp,
	}
	data, err := json.Marshal(out)
	if err != nil {
		http.Error(w, fmt.Sprintf("could not encode the AdmissionReview response: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// decodeReview accepts only an admission.k8s.io/v1 AdmissionReview with a request.
func decodeReview(body []byte) (*admissionv1.AdmissionReview, error) {
	review := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(body, review); err != nil {
		return nil, fmt.Errorf("request body is not an admission.k8s.io/v1 AdmissionReview: %v", err)
	}
	if gvk := review.GroupVersionKind(); gvk != reviewGVK {
		return nil, fmt.Errorf("request body is not an admission.k8s.io/v1 AdmissionReview: got apiVersion %q, kind %q",
			review.APIVersion, review.Kind)
	}
	if review.Request == nil {
		return nil, errors.New("AdmissionReview has no request")
	}
	return review, nil
}

// review answers one request. It never panics: a panic is turned into a denial.
func (h *Handler) review(ctx context.Context, req *admissionv1.AdmissionRequest) (resp *admissionv1.AdmissionResponse) {
	defer func() {
		if r := recover(); r != nil {
			resp = deny(http.StatusInternalServerError, metav1.StatusReasonInternalError,
				fmt.Sprintf("internal error validating the request: %v", r))
		}
	}()

	switch {
	case req.SubResource == "" && req.Kind == deploymentKind &&
		(req.Operation == admissionv1.Create || req.Operation == admissionv1.Update):
		return h.reviewDeployment(req)
	case req.SubResource == "scale" && req.Resource == deploymentsGVR && req.Operation == admissionv1.Update:
		return h.reviewScale(ctx, req)
	}
	return allow()
}

func (h *Handler) reviewDeployment(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	d, err := decodeDeployment(req.Object.Raw, "object")
	if err != nil {
		return deny(http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
	}
	var errs field.ErrorList
	if req.Operation == admissionv1.Create {
		errs = ValidateCreate(d, h.gateEnabled())
	} else {
		old, err := decodeDeployment(req.OldObject.Raw, "oldObject")
		if err != nil {
			return deny(http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		}
		errs = ValidateUpdate(d, old, h.gateEnabled())
	}
	return result(nameOf(d.Name, req.Name), errs)
}

func (h *Handler) reviewScale(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	scale, err := decodeScale(req.Object.Raw)
	if err != nil {
		return deny(http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
	}
	namespace, name := req.Namespace, req.Name
	if namespace == "" {
		namespace = scale.Namespace
	}
	if name == "" {
		name = scale.Name
	}
	// Fail closed: without the stored Deployment the explicit minCount floor
	// cannot be checked, and letting the scale through could break the gang.
	if h.GetDeployment == nil {
		return deny(http.StatusInternalServerError, metav1.StatusReasonInternalError, fmt.Sprintf(
			"cannot validate this scale request: deployment %s/%s could not be read: the webhook cannot read deployments (no GetDeployment configured)", namespace, name))
	}
	d, err := h.GetDeployment(ctx, namespace, name)
	if err == nil && d == nil {
		err = errors.New("no deployment returned")
	}
	if err != nil {
		code, reason := int32(http.StatusInternalServerError), metav1.StatusReasonInternalError
		var status apierrors.APIStatus
		if errors.As(err, &status) && status.Status().Code != 0 {
			code, reason = status.Status().Code, status.Status().Reason
		}
		return deny(code, reason, fmt.Sprintf(
			"cannot validate this scale request: deployment %s/%s could not be read (the webhook fails closed, retry the request): %v", namespace, name, err))
	}
	return result(name, ValidateScale(d, scale.Spec.Replicas))
}

func (h *Handler) gateEnabled() bool {
	return h.GateEnabled != nil && h.GateEnabled()
}

func decodeDeployment(raw []byte, what string) (*appsv1.Deployment, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("could not decode the Deployment in request.%s: it is empty", what)
	}
	obj, gvk, err := objectDecoder.Decode(raw, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("could not decode the Deployment in request.%s: %v", what, err)
	}
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return nil, fmt.Errorf("could not decode the Deployment in request.%s: got %v, want %v", what, gvk, deploymentGVK)
	}
	return d, nil
}

func decodeScale(raw []byte) (*autoscalingv1.Scale, error) {
	if len(raw) == 0 {
		return nil, errors.New("could not decode the Scale in request.object: it is empty")
	}
	obj, gvk, err := objectDecoder.Decode(raw, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("could not decode the Scale in request.object: %v", err)
	}
	s, ok := obj.(*autoscalingv1.Scale)
	if !ok {
		return nil, fmt.Errorf("could not decode the Scale in request.object: got %v, want %v", gvk, autoscalingScale)
	}
	return s, nil
}

func nameOf(names ...string) string {
	for _, n := range names {
		if n != "" {
			return n
		}
	}
	return ""
}

func allow() *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true}
}

// result allows an empty list and otherwise denies with the Status the
// apiserver returns for a failed validation (apierrors.NewInvalid).
func result(name string, errs field.ErrorList) *admissionv1.AdmissionResponse {
	if len(errs) == 0 {
		return allow()
	}
	status := apierrors.NewInvalid(deploymentGK, name, errs).ErrStatus
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &status}
}

func deny(code int32, reason metav1.StatusReason, message string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    code,
			Reason:  reason,
			Message: message,
		},
	}
}
