package framework

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	webhookerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
)

var deploymentsGK = schema.GroupKind{Group: "apps", Kind: "Deployment"}

// Each mechanism's rejection, shaped as the 1.37 apiserver returns it.
func native(errs ...*field.Error) error {
	return apierrors.NewInvalid(deploymentsGK, "d", field.ErrorList(errs))
}

// webhook: a validating webhook's AdmissionResponse.Result as the apiserver
// wraps it (webhook/errors.ToStatusErr), keeping the webhook's Details.
func webhook(errs ...*field.Error) error {
	st := apierrors.NewInvalid(deploymentsGK, "d", field.ErrorList(errs)).ErrStatus
	return webhookerrors.ToStatusErr("apps.example.io", &st)
}

// webhookMessageOnly: a webhook that sets a message and no causes.
func webhookMessageOnly(message string) error {
	return webhookerrors.ToStatusErr("apps.example.io", &metav1.Status{Code: 400, Message: message})
}

// policy: a ValidatingAdmissionPolicy denial (validating/dispatcher.go): a
// Forbidden-shaped error whose only cause is the message.
func policy(message string) error {
	m := "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: " + message
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid,
		Message: m, Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Message: m}}}}}
}

func TestMatchRejection(t *testing.T) {
	scheduling := field.NewPath("spec", "scheduling")
	gang := scheduling.Child("schedulingPolicy", "gang")
	strategy := field.NewPath("spec", "strategy", "type")
	forbidden := Rejection{Paths: []string{"spec.scheduling"}, Types: []field.ErrorType{field.ErrorTypeForbidden}}
	gangOrStrategy := Rejection{Paths: []string{gang.String(), "spec.strategy"}}
	for _, tc := range []struct {
		name string
		err  error
		r    Rejection
		ok   bool
	}{
		{"upstream marker: field.Forbidden(path, \"\")", native(field.Forbidden(scheduling, "")), forbidden, true},
		{"our webhook, with our wording", webhook(field.Forbidden(scheduling, "the WorkloadWithDeployment gate is off")), forbidden, true},
		{"a webhook with a bare Forbidden", webhook(field.Forbidden(scheduling, "")), forbidden, true},
		{"message only, field.Error form", webhookMessageOnly(`Deployment.apps "d" is invalid: spec.scheduling: Forbidden`), forbidden, true},
		{"below the path", native(field.Forbidden(scheduling.Child("resourceClaims"), "")), forbidden, true},
		{"the rule reported at its other field", native(field.NotSupported(strategy, "RollingUpdate", []string{"Recreate"})), gangOrStrategy, true},
		{"the rule at the gang", webhook(field.Invalid(gang, "", "")), gangOrStrategy, true},
		{"a policy naming the field", policy("spec.strategy.type must be Recreate for a gang"), gangOrStrategy, true},
		{"accepted", nil, forbidden, false},
		{"not an API error", errors.New("connection refused"), forbidden, false},
		{"another field", native(field.Forbidden(field.NewPath("spec", "replicas"), "")), forbidden, false},
		{"a sibling whose name starts the same", native(field.Forbidden(field.NewPath("spec", "schedulingX"), "")), forbidden, false},
		{"another type", native(field.Invalid(scheduling, "x", "")), forbidden, false},
		{"the path only in another error's detail", native(field.Invalid(field.NewPath("spec", "replicas"), 1, "see spec.scheduling")), forbidden, false},
		{"a policy naming no field", policy("gang needs Recreate"), gangOrStrategy, false},
		{"message only, another field", webhookMessageOnly(`spec.replicas: Forbidden: spec.scheduling is set`), forbidden, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := MatchRejection(tc.err, tc.r)
			if (err == nil) != tc.ok {
				t.Errorf("MatchRejection(%v, %s) = %v; want match %t", tc.err, tc.r, err, tc.ok)
			}
		})
	}
}
