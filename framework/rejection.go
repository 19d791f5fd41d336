package framework

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Rejection is what a rejection the KEPs require must say: the field it is
// about and what kind of error it is, never our wording. The KEPs specify
// their API with declarative validation markers (+k8s:forbidden, ...), which
// upstream turns into field.Forbidden(path, "") and the like: a message such
// as "spec.scheduling: Forbidden" with no detail, so a detail can never be
// required.
type Rejection struct {
	// Paths are the fields the rejection may name: a field error at one of
	// them or below it matches. List every path the KEP's text allows (a
	// rule between two fields may be reported at either).
	Paths []string
	// Types are the accepted error types (field.ErrorTypeForbidden, ...);
	// empty accepts any field error.
	Types []field.ErrorType
}

func (r Rejection) String() string {
	s := strings.Join(r.Paths, " or ")
	if len(r.Types) > 0 {
		var types []string
		for _, t := range r.Types {
			types = append(types, string(t))
		}
		s += " (" + strings.Join(types, " or ") + ")"
	}
	return s
}

// fieldErrorForm is field.Error's text, "<path>: <type>[: detail]", as it
// appears in a Status message (apierrors.NewInvalid joins them) when a
// mechanism returns no causes.
var fieldErrorForm = regexp.MustCompile(`([A-Za-z][A-Za-z0-9_.\[\]/'"-]*): (Forbidden|Invalid value|Required value|Unsupported value|Duplicate value|Too many|Too long|Not found|Internal error|Unsupported)`)

// typeOfText maps field.ErrorType's String() back to the type.
var typeOfText = map[string]field.ErrorType{}

func init() {
	for _, t := range []field.ErrorType{field.ErrorTypeNotFound, field.ErrorTypeRequired, field.ErrorTypeDuplicate,
		field.ErrorTypeInvalid, field.ErrorTypeNotSupported, field.ErrorTypeForbidden, field.ErrorTypeTooLong,
		field.ErrorTypeTooMany, field.ErrorTypeInternal, field.ErrorTypeTypeInvalid} {
		typeOfText[t.String()] = t
	}
}

// fieldError is one field error a rejection carried.
type fieldError struct {
	Path string
	Type field.ErrorType
}

// fieldErrors reads the field errors of a rejection from its Status: the
// causes where the mechanism kept them (native validation, a webhook that
// returns apierrors.NewInvalid's Status), else the field.Error forms in the
// message (a webhook that only sets a message). A ValidatingAdmissionPolicy
// carries neither unless its message names the field in that form; then the
// message is all there is, and MatchRejection falls back to it.
func fieldErrors(status metav1.Status) []fieldError {
	var out []fieldError
	if status.Details != nil {
		for _, c := range status.Details.Causes {
			if c.Field != "" {
				out = append(out, fieldError{Path: c.Field, Type: field.ErrorType(c.Type)})
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, m := range fieldErrorForm.FindAllStringSubmatch(status.Message, -1) {
		out = append(out, fieldError{Path: m[1], Type: typeOfText[m[2]]})
	}
	return out
}

// under reports whether path is p or a field below it ("a.b[0].c" is under
// "a.b" and "a.b[0]", not under "a.bc").
func under(path, p string) bool {
	return path == p || strings.HasPrefix(path, p) && (path[len(p)] == '.' || path[len(p)] == '[')
}

// AcceptedPaths adds, in annotation mode, the annotation that carries the
// intent: the user wrote the intent there, so a rejection may name it
// instead of the spec.scheduling path the native field would have. The
// KEPs fix neither (they know only the native field).
func AcceptedPaths(paths ...string) []string {
	if Intent != nil && (Intent.Mode == IntentAnnotation || Intent.StatefulSetMode == IntentAnnotation) {
		if slices.ContainsFunc(paths, func(p string) bool { return under(p, "spec.scheduling") }) {
			paths = append(slices.Clip(paths), "metadata.annotations")
		}
	}
	return paths
}

// MatchRejection returns nil when err is an API rejection naming one of
// r.Paths with one of r.Types, and otherwise says what it got.
func MatchRejection(err error, r Rejection) error {
	if err == nil {
		return fmt.Errorf("the request was accepted; expected a rejection at %s", r)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return fmt.Errorf("not an API rejection (expected one at %s): %v", r, err)
	}
	st := status.Status()
	errs := fieldErrors(st)
	for _, fe := range errs {
		if !slices.ContainsFunc(r.Paths, func(p string) bool { return under(fe.Path, p) }) {
			continue
		}
		if len(r.Types) == 0 || slices.Contains(r.Types, fe.Type) {
			return nil
		}
	}
	if len(errs) == 0 && len(r.Types) == 0 {
		// No field errors to read (a policy's own message): the message must
		// at least name the field.
		for _, p := range r.Paths {
			if strings.Contains(st.Message, p) {
				return nil
			}
		}
	}
	return fmt.Errorf("the rejection does not name %s; its field errors: %v; message: %s", r, errs, st.Message)
}

// ExpectRejected asserts that err is a rejection at one of paths (any field
// error type), in annotation mode also at the intent annotation.
func ExpectRejected(err error, paths ...string) {
	ginkgo.GinkgoHelper()
	ExpectRejection(err, Rejection{Paths: AcceptedPaths(paths...)})
}

// ExpectRejection asserts MatchRejection, and logs the rejection.
func ExpectRejection(err error, r Rejection) {
	ginkgo.GinkgoHelper()
	gomega.Expect(MatchRejection(err, r)).To(gomega.Succeed())
	ginkgo.GinkgoWriter.Printf("rejected as expected: %v\n", err)
}
