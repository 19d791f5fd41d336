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
	"k8s.io/klog/v2"
)

// Path is where the webhook is served, for both kinds: the Handler routes each
// request by its kind, not by URL. Register it in a
// ValidatingWebhookConfiguration for apps/v1 deployments (CREATE, UPDATE),
// deployments/scale (UPDATE) and statefulsets (CREATE, UPDATE), with
// admissionReviewVersions ["v1"]. (The value predates StatefulSet support and
// is kept so existing configurations keep working.)
const Path = "/validate-apps-v1-deployment"

// apiServerRequestLimit is kube-apiserver's limit on a create or update
// body (genericapiserver's MaxRequestBodyBytes, 3 MiB).
const apiServerRequestLimit = 3 << 20

// maxBodyBytes bounds an AdmissionReview body: an UPDATE carries the new
// object (at most apiServerRequestLimit) and the stored one (smaller still:
// etcd's limit is 1.5 MiB), plus a small envelope. Anything larger is not a
// review the API server sends, and is refused before it is read.
const maxBodyBytes = 2*apiServerRequestLimit + 64<<10

var (
	deploymentKind   = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	deploymentsGVR   = metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	deploymentGK     = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	statefulSetKind  = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
	reviewGVK        = admissionv1.SchemeGroupVersion.WithKind("AdmissionReview")
	objectDecoder    runtime.Decoder
	deploymentGVK    = appsv1.SchemeGroupVersion.WithKind("Deployment")
	statefulSetGVK   = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
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

// Handler is the validating admission webhook for Deployments and
// StatefulSets. It serves admission.k8s.io/v1 AdmissionReview requests:
//
//   - apps/v1 Deployment CREATE and UPDATE run ValidateCreate and ValidateUpdate;
//   - UPDATE of the deployments/scale subresource (an autoscaling/v1 Scale)
//     reads the stored Deployment with GetDeployment and runs ValidateScale;
//   - apps/v1 StatefulSet CREATE and UPDATE run ValidateStatefulSetCreate and
//     ValidateStatefulSetUpdate; their warnings go into response.warnings
//     (statefulsets/scale needs no check: a StatefulSet's gang minCount is
//     always derived from spec.replicas);
//   - anything else is allowed.
//
// Rejections are answered the way the apiserver reports a validation
// failure: allowed false, code 422, reason Invalid, the aggregated message and
// one cause per error.
type Handler struct {
	// GateEnabled reports the WorkloadWithDeployment feature gate. A nil
	// GateEnabled means the gate is off (its default).
	GateEnabled func() bool
	// StatefulSetGateEnabled reports the WorkloadWithStatefulSet feature
	// gate. A nil StatefulSetGateEnabled means the gate is off (its default).
	StatefulSetGateEnabled func() bool
	// GetDeployment reads a Deployment for /scale requests, which carry only
	// the Scale; resourceVersion is the stored Deployment's version the scale
	// applies to ("" when the review does not say), so a cache can tell
	// whether its copy is current (DeploymentReader). If it fails (or is
	// nil), the scale request is denied: the webhook fails closed rather than
	// let a scale below an explicit minCount through unchecked.
	GetDeployment func(ctx context.Context, namespace, name, resourceVersion string) (*appsv1.Deployment, error)
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
		status := http.StatusBadRequest
		if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		http.Error(w, fmt.Sprintf("could not read the request body: %v", err), status)
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
	case req.SubResource == "" && req.Kind == statefulSetKind &&
		(req.Operation == admissionv1.Create || req.Operation == admissionv1.Update):
		return h.reviewStatefulSet(req)
	}
	return allow()
}

func (h *Handler) reviewDeployment(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	gate := h.gateEnabled()
	create := func(d *appsv1.Deployment) (field.ErrorList, []string) { return ValidateCreate(d, gate), nil }
	update := func(d, old *appsv1.Deployment) (field.ErrorList, []string) { return ValidateUpdate(d, old, gate), nil }
	return reviewObject(req, deploymentGVK, create, update)
}

func (h *Handler) reviewStatefulSet(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	gate := h.statefulSetGateEnabled()
	create := func(s *appsv1.StatefulSet) (field.ErrorList, []string) { return ValidateStatefulSetCreate(s, gate) }
	update := func(s, old *appsv1.StatefulSet) (field.ErrorList, []string) {
		return ValidateStatefulSetUpdate(s, old, gate)
	}
	return reviewObject(req, statefulSetGVK, create, update)
}

// reviewedObject is a kind the webhook validates on CREATE and UPDATE.
type reviewedObject interface {
	runtime.Object
	metav1.Object
}

// reviewObject decodes request.object (and, on UPDATE, request.oldObject) as
// a T of kind want, runs create or update on it, and answers with the errors
// and warnings. An undecodable object is a 400 denial naming it.
func reviewObject[T reviewedObject](req *admissionv1.AdmissionRequest, want schema.GroupVersionKind,
	create func(obj T) (field.ErrorList, []string), update func(obj, old T) (field.ErrorList, []string)) *admissionv1.AdmissionResponse {
	obj, err := decodeObject[T](req.Object.Raw, "object", want)
	if err != nil {
		return deny(http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
	}
	var errs field.ErrorList
	var warnings []string
	if req.Operation == admissionv1.Create {
		errs, warnings = create(obj)
	} else {
		old, err := decodeObject[T](req.OldObject.Raw, "oldObject", want)
		if err != nil {
			return deny(http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		}
		errs, warnings = update(obj, old)
	}
	resp := result(want.GroupKind(), nameOf(obj.GetName(), req.Name), errs)
	resp.Warnings = warnings
	return resp
}

func (h *Handler) reviewScale(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	scale, err := decodeObject[*autoscalingv1.Scale](req.Object.Raw, "object", autoscalingScale)
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
	// The reply says only that the read failed, never why: whether a
	// Deployment exists, or who may read it, is not the caller's to learn
	// from the webhook (the cause goes to the log).
	if h.GetDeployment == nil {
		return deny(http.StatusInternalServerError, metav1.StatusReasonInternalError, fmt.Sprintf(
			"cannot validate this scale request: deployment %s/%s could not be read: the webhook cannot read deployments (no GetDeployment configured)", namespace, name))
	}
	var resourceVersion string
	if len(req.OldObject.Raw) > 0 {
		if old, err := decodeObject[*autoscalingv1.Scale](req.OldObject.Raw, "oldObject", autoscalingScale); err == nil {
			resourceVersion = old.ResourceVersion
		}
	}
	d, err := h.GetDeployment(ctx, namespace, name, resourceVersion)
	if err == nil && d == nil {
		err = errors.New("no deployment returned")
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Denying a scale review: the Deployment could not be read", "deployment", klog.KRef(namespace, name), "uid", req.UID)
		return deny(http.StatusInternalServerError, metav1.StatusReasonInternalError, fmt.Sprintf(
			"cannot validate this scale request: deployment %s/%s could not be read (the webhook fails closed, retry the request)", namespace, name))
	}
	return result(deploymentGK, name, ValidateScale(d, scale.Spec.Replicas))
}

func (h *Handler) gateEnabled() bool {
	return h.GateEnabled != nil && h.GateEnabled()
}

func (h *Handler) statefulSetGateEnabled() bool {
	return h.StatefulSetGateEnabled != nil && h.StatefulSetGateEnabled()
}

// decodeObject decodes request.<what> as a T, which must be of kind want.
func decodeObject[T runtime.Object](raw []byte, what string, want schema.GroupVersionKind) (T, error) {
	var zero T
	if len(raw) == 0 {
		return zero, fmt.Errorf("could not decode the %s in request.%s: it is empty", want.Kind, what)
	}
	obj, gvk, err := objectDecoder.Decode(raw, nil, nil)
	if err != nil {
		return zero, fmt.Errorf("could not decode the %s in request.%s: %v", want.Kind, what, err)
	}
	t, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("could not decode the %s in request.%s: got %v, want %v", want.Kind, what, gvk, want)
	}
	return t, nil
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
// apiserver returns for a failed validation of a gk object
// (apierrors.NewInvalid).
func result(gk schema.GroupKind, name string, errs field.ErrorList) *admissionv1.AdmissionResponse {
	if len(errs) == 0 {
		return allow()
	}
	status := apierrors.NewInvalid(gk, name, errs).ErrStatus
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
