package framework

import (
	"errors"
	"fmt"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	webhookerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
	"k8s.io/utils/ptr"
)

const testAnnotation = "scheduling.example.com/deployment-scheduling"

var (
	gangPath     = field.NewPath("spec", "scheduling", "schedulingPolicy", "gang")
	minCountPath = gangPath.Child("minCount")
	deployGK     = schema.GroupKind{Group: "apps", Kind: "Deployment"}
)

// nativeInvalid is what kube-apiserver returns for a field.ErrorList from
// its own (declarative or hand-written) validation.
func nativeInvalid(errs ...*field.Error) error {
	return apierrors.NewInvalid(deployGK, "web", field.ErrorList(errs))
}

// webhookDenial is what kube-apiserver returns when a validating webhook
// answers with result: the response's Result, wrapped as the webhook
// dispatcher wraps it.
func webhookDenial(result *metav1.Status) error {
	resp := admissionv1.AdmissionResponse{Allowed: false, Result: result}
	return webhookerrors.ToStatusErr("validate.example.com", resp.Result)
}

// vapDenial is what kube-apiserver returns when a ValidatingAdmissionPolicy
// denies a create, built the way
// k8s.io/apiserver/pkg/admission/plugin/policy/validating (dispatcher.go,
// v0.37.2) builds it: admission.NewForbidden with the policy's message, the
// validation's reason (Invalid when unset), its code, and one cause with the
// message only. A validation's fieldPath does not reach the Status at all, so
// the path can only be read from the message the vendor writes.
func vapDenial(reason metav1.StatusReason, message string) error {
	msg := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", "gang-recreate", "gang-recreate-binding", message)
	// admission.NewForbidden(a, err) is apierrors.NewForbidden(a's resource,
	// a's name, err) (k8s.io/apiserver/pkg/admission/errors.go); the package
	// itself is not imported, for it pulls in cel-go.
	var err *apierrors.StatusError
	if !errors.As(apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", errors.New(msg)), &err) {
		panic("apierrors.NewForbidden returned no StatusError")
	}
	if reason == "" {
		reason = metav1.StatusReasonInvalid
	}
	err.ErrStatus.Reason = reason
	err.ErrStatus.Code = map[metav1.StatusReason]int32{metav1.StatusReasonForbidden: 403, metav1.StatusReasonInvalid: 422}[reason]
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Message: msg})
	return err
}

func TestCheckRejection(t *testing.T) {
	gangRejected := Rejection{
		Paths: []string{"spec.scheduling.schedulingPolicy.gang", "spec.strategy"},
		Types: []field.ErrorType{field.ErrorTypeInvalid, field.ErrorTypeForbidden, field.ErrorTypeNotSupported},
	}
	gateOff := Rejection{Paths: []string{"spec.scheduling"}, Types: []field.ErrorType{field.ErrorTypeForbidden}}
	gateOffAnnotated := gateOff
	gateOffAnnotated.Annotation = testAnnotation
	replicasInvalid := Rejection{Paths: []string{"spec.replicas"}, Types: []field.ErrorType{field.ErrorTypeInvalid}, Annotation: testAnnotation}
	annotation := field.NewPath("metadata", "annotations").Key(testAnnotation)

	cases := []struct {
		name string
		err  error
		want Rejection
		ok   bool
	}{
		// Native declarative validation: +k8s:forbidden yields field.Forbidden(path, "").
		{"native: Forbidden with no detail", nativeInvalid(field.Forbidden(field.NewPath("spec", "scheduling"), "")), gateOff, true},
		{"native: Invalid below the path, any detail", nativeInvalid(field.Invalid(minCountPath, int32(3), "whatever the vendor says")), gangRejected, true},
		{"native: NotSupported at spec.strategy.type", nativeInvalid(field.NotSupported(field.NewPath("spec", "strategy", "type"), "RollingUpdate", []string{"Recreate"})), gangRejected, true},
		{"native: one of several errors matches", nativeInvalid(
			field.Required(field.NewPath("spec", "selector"), ""), field.Forbidden(gangPath, "")), gangRejected, true},
		// A webhook that returns a field.ErrorList as a Status (the reference's way).
		{"webhook: Status with causes", webhookDenial(&nativeInvalid(field.Forbidden(gangPath, "needs Recreate")).(*apierrors.StatusError).ErrStatus), gangRejected, true},
		// A webhook that sets only a message in field.Error form.
		{"webhook: message only", webhookDenial(&metav1.Status{Message: field.Forbidden(gangPath, "needs Recreate").Error()}), gangRejected, true},
		{"webhook: message-only list", webhookDenial(&metav1.Status{Message: field.ErrorList{
			field.Required(field.NewPath("spec", "selector"), ""), field.Invalid(gangPath, nil, "x")}.ToAggregate().Error()}), gangRejected, true},
		// A ValidatingAdmissionPolicy, with reason Forbidden and without a reason (Invalid).
		{"VAP: reason Forbidden, path in the message", vapDenial(metav1.StatusReasonForbidden, "spec.scheduling: Forbidden"), gateOff, true},
		{"VAP: no reason, path and detail in the message", vapDenial("", "spec.strategy.type: Unsupported value: \"RollingUpdate\": gang needs Recreate"), gangRejected, true},
		// Annotation mode: the user wrote an annotation, the rejection may name it.
		{"annotation mode: the annotation's path", nativeInvalid(field.Forbidden(annotation, "")), gateOffAnnotated, true},
		{"annotation mode: the annotation's path with a suffix", webhookDenial(&metav1.Status{Message: "metadata.annotations[" + testAnnotation + "].schedulingPolicy: Forbidden"}), gateOffAnnotated, true},
		{"annotation mode: the native path still", nativeInvalid(field.Forbidden(field.NewPath("spec", "scheduling"), "")), gateOffAnnotated, true},

		// Negative rows.
		{"accepted request", nil, gateOff, false},
		{"wrong path", nativeInvalid(field.Invalid(field.NewPath("spec", "replicas"), 2, "")), gangRejected, false},
		{"a sibling path is not below", nativeInvalid(field.Forbidden(field.NewPath("spec", "schedulingGates"), "")), gateOff, false},
		{"wrong type", nativeInvalid(field.Required(field.NewPath("spec", "scheduling"), "")), gateOff, false},
		{"webhook: message-only with another path", webhookDenial(&metav1.Status{Message: "spec.replicas: Forbidden: too low"}), gateOff, false},
		{"webhook: message without a path", webhookDenial(&metav1.Status{Message: "gang scheduling needs Recreate", Code: 403}), gangRejected, false},
		{"VAP: message without a path", vapDenial(metav1.StatusReasonForbidden, "WorkloadWithDeployment is disabled"), gateOff, false},
		{"VAP: another path", vapDenial("", "spec.template: Invalid value: \"x\""), gangRejected, false},
		{"annotation path outside annotation mode", nativeInvalid(field.Forbidden(annotation, "")), gateOff, false},
		{"annotation path for a non-intent field", nativeInvalid(field.Invalid(annotation, nil, "")), replicasInvalid, false},
		{"another annotation", nativeInvalid(field.Forbidden(field.NewPath("metadata", "annotations").Key("other"), "")), gateOffAnnotated, false},
		{"not an API error", errors.New("connection refused"), gateOff, false},
		{"an API error without field errors", apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", errors.New("the object has been modified")), gateOff, false},
		{"an empty Rejection never matches", nativeInvalid(field.Forbidden(field.NewPath("spec", "scheduling"), "")), Rejection{Paths: []string{"spec.scheduling"}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckRejection(tc.err, tc.want)
			if tc.ok && got != nil {
				t.Errorf("want a match, got: %v", got)
			}
			if !tc.ok && got == nil {
				t.Errorf("want no match for %v (reported %v)", tc.err, ptr.To(ReportedFields(orNil(tc.err))))
			}
		})
	}
}

func orNil(err error) error {
	if err == nil {
		return errors.New("")
	}
	return err
}

// TestReportedFieldsReadsCauses pins where each mechanism's field comes
// from: the causes for native validation, the message for a VAP.
func TestReportedFieldsReadsCauses(t *testing.T) {
	got := ReportedFields(nativeInvalid(field.Invalid(minCountPath, int32(3), "a detail: with colons")))
	want := Reported{Field: minCountPath.String(), Type: field.ErrorTypeInvalid}
	if len(got) == 0 || got[len(got)-1] != want {
		t.Errorf("native: got %v, want %v last (from the cause)", got, want)
	}
	got = ReportedFields(vapDenial(metav1.StatusReasonForbidden, "spec.scheduling: Forbidden"))
	for _, r := range got {
		if r != (Reported{Field: "spec.scheduling", Type: field.ErrorTypeForbidden}) {
			t.Errorf("VAP: unexpected %v", r)
		}
	}
	if len(got) == 0 {
		t.Errorf("VAP: nothing read from %q", vapDenial(metav1.StatusReasonForbidden, "spec.scheduling: Forbidden"))
	}
}

func TestJudgeGateOff(t *testing.T) {
	forbidden := nativeInvalid(field.Forbidden(field.NewPath("spec", "scheduling"), ""))
	stored := func(has bool) func() (bool, error) { return func() (bool, error) { return has, nil } }
	cases := []struct {
		name    string
		c       GateOffCreate
		reading string // "" when no reading fits
	}{
		{"rejected, Forbidden", GateOffCreate{Err: forbidden, ClearsAllowed: true}, ReadingRejects},
		{"rejected where only rejection is allowed", GateOffCreate{Err: forbidden}, ReadingRejects},
		{"accepted and cleared", GateOffCreate{ClearsAllowed: true, Stored: stored(false)}, ReadingClears},
		{"accepted and kept", GateOffCreate{ClearsAllowed: true, Stored: stored(true)}, ""},
		{"accepted where clearing is not allowed", GateOffCreate{Stored: stored(false)}, ""},
		{"rejected with the wrong type", GateOffCreate{Err: nativeInvalid(field.Invalid(field.NewPath("spec", "scheduling"), nil, "")), ClearsAllowed: true}, ""},
		{"rejected at another path", GateOffCreate{Err: nativeInvalid(field.Forbidden(field.NewPath("spec", "template"), "")), ClearsAllowed: true}, ""},
		{"the stored object cannot be read", GateOffCreate{ClearsAllowed: true, Stored: func() (bool, error) { return false, errors.New("boom") }}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reading, err := JudgeGateOff(tc.c)
			if tc.reading == "" && err == nil {
				t.Errorf("want no reading, got %q", reading)
			}
			if tc.reading != "" && (err != nil || reading != tc.reading) {
				t.Errorf("want %q, got %q, %v", tc.reading, reading, err)
			}
		})
	}
}
