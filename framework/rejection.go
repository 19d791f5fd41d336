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
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/workload-aware/apps-harness/testplan"
)

// Rejection is what a spec accepts as the API's answer to a request the KEPs
// say is rejected: a field path and an error type, never wording. The KEPs
// fix the rule, not the message, and a vendor may validate by an admission
// webhook, a ValidatingAdmissionPolicy or native (declarative) validation.
type Rejection struct {
	// Paths are the accepted field paths (native form, e.g.
	// "spec.scheduling.schedulingPolicy.gang"). A reported path matches when
	// it equals one of them or lies below it ("." or "[" follows).
	Paths []string
	// Types are the accepted field.ErrorTypes (at least one).
	Types []field.ErrorType
	// Annotation, when set, is the annotation that carries the intent
	// (annotation mode): a path under spec.scheduling is then also accepted
	// as metadata.annotations[<Annotation>], with or without a suffix, since
	// that is the field the user wrote. See IntentSeam.Rejection.
	Annotation string
}

// Reported is one (field, type) pair a rejection named.
type Reported struct {
	Field string
	Type  field.ErrorType
}

func (r Reported) String() string { return r.Field + " (" + string(r.Type) + ")" }

// ExpectRejected fails the spec unless err is a rejection that names one of
// want's paths with one of its types.
func ExpectRejected(err error, want Rejection) {
	ginkgo.GinkgoHelper()
	gomega.Expect(CheckRejection(err, want)).To(gomega.Succeed())
	ginkgo.GinkgoWriter.Printf("rejected as expected: %v\n", err)
}

// CheckRejection returns nil when err is a rejection that names one of
// want's paths with one of its types, and otherwise says what it got.
func CheckRejection(err error, want Rejection) error {
	if len(want.Paths) == 0 || len(want.Types) == 0 {
		return fmt.Errorf("framework: a Rejection needs paths and types (got %+v)", want)
	}
	if err == nil {
		return fmt.Errorf("the request was accepted; expected a rejection at %s", want)
	}
	reported := unique(ReportedFields(err))
	for _, r := range reported {
		if want.matches(r) {
			return nil
		}
	}
	return fmt.Errorf("the rejection names %v; expected %s\nthe error: %v", reported, want, err)
}

func (r Rejection) String() string {
	paths := r.Paths
	if r.Annotation != "" {
		paths = append(slices.Clone(paths), annotationPath(r.Annotation)+" (for a path under spec.scheduling)")
	}
	return fmt.Sprintf("one of the paths %v (or below) with one of the types %v", paths, r.Types)
}

func (r Rejection) matches(got Reported) bool {
	if !slices.Contains(r.Types, got.Type) {
		return false
	}
	for _, p := range r.Paths {
		if atOrBelow(got.Field, p) {
			return true
		}
		if r.Annotation != "" && atOrBelow(p, "spec.scheduling") && strings.HasPrefix(got.Field, annotationPath(r.Annotation)) {
			return true
		}
	}
	return false
}

// annotationPath is field.NewPath("metadata", "annotations").Key(key), the
// path a validator reports for an annotation.
func annotationPath(key string) string {
	return field.NewPath("metadata", "annotations").Key(key).String()
}

func atOrBelow(got, path string) bool {
	if !strings.HasPrefix(got, path) {
		return false
	}
	rest := got[len(path):]
	return rest == "" || rest[0] == '.' || rest[0] == '['
}

// ReportedFields reads the (field, type) pairs of an API error: the
// metav1.Status causes that carry a field and a type (field.ErrorList through
// apierrors.NewInvalid: native validation, or a webhook that returns such a
// Status), and, for the mechanisms that return only a message (a webhook
// that sets a message; a ValidatingAdmissionPolicy, whose one cause has only
// a message), every "<path>: <Type>" the messages hold, in the form of
// field.Error.Error().
func ReportedFields(err error) []Reported {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return parseFieldErrors(err.Error())
	}
	st := status.Status()
	out := parseFieldErrors(st.Message)
	if st.Details == nil {
		return out
	}
	for _, c := range st.Details.Causes {
		if c.Field != "" && c.Type != "" {
			out = append(out, Reported{Field: c.Field, Type: field.ErrorType(c.Type)})
			continue
		}
		out = append(out, parseFieldErrors(c.Message)...)
	}
	return out
}

// errorTypes are the types a field.Error can carry, by the text
// field.ErrorType.String() prints ("Invalid value" stands for two).
var errorTypes = []field.ErrorType{
	field.ErrorTypeNotFound, field.ErrorTypeRequired, field.ErrorTypeDuplicate, field.ErrorTypeInvalid,
	field.ErrorTypeNotSupported, field.ErrorTypeForbidden, field.ErrorTypeTooLong, field.ErrorTypeTooMany,
	field.ErrorTypeTooFew, field.ErrorTypeInternal, field.ErrorTypeTypeInvalid, field.ErrorTypeTooShort,
}

// fieldErrorText matches "<path>: <Type>" as field.Error.Error() prints it:
// a path of dotted names and [index]/[key] parts, then the type's text.
var fieldErrorText = func() *regexp.Regexp {
	var names []string
	for _, t := range errorTypes {
		if n := regexp.QuoteMeta(t.String()); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[^\]\s]*\])*): (` + strings.Join(names, "|") + `)\b`)
}()

func parseFieldErrors(msg string) []Reported {
	var out []Reported
	for _, m := range fieldErrorText.FindAllStringSubmatch(msg, -1) {
		for _, t := range errorTypes {
			if t.String() == m[2] {
				out = append(out, Reported{Field: m[1], Type: t})
			}
		}
	}
	return out
}

// The two readings of KEP-6277 for a create that sets spec.scheduling while
// the gate is off on the apiserver side. Its API section marks the field
// +k8s:ifDisabled(WorkloadWithStatefulSet)=+k8s:forbidden (rejected), while
// its PRR says "kube-apiserver: Clears spec.scheduling on new creates;
// preserves the stored value on existing objects (standard alpha
// field-gating)". KEP-6276 has no such contradiction: its marker and its PRR
// both say rejected.
const (
	ReadingRejects = "rejects on create"
	ReadingClears  = "clears on create"
)

// GateOffCreate is a create that set intent while the gate was off on the
// apiserver side.
type GateOffCreate struct {
	// Err is the server's answer.
	Err error
	// Annotation is the intent annotation in annotation mode, else "".
	Annotation string
	// ClearsAllowed is set where the KEP allows the "clears" reading.
	ClearsAllowed bool
	// Stored reads whether the created object still carries intent.
	Stored func() (bool, error)
}

// ExpectGateOff judges c by the readings the KEP allows (JudgeGateOff),
// records the reading as the report entry "reading" and returns it; the
// caller asserts that nothing was created for an accepted object.
func ExpectGateOff(c GateOffCreate) string {
	ginkgo.GinkgoHelper()
	reading, err := JudgeGateOff(c)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	RecordReading(reading)
	return reading
}

// RecordReading records which of the readings the KEP allows the
// implementation took, as the spec's report entry "reading"
// (testplan.ReadingEntry), which the test-plan report shows beside the id.
func RecordReading(reading string) {
	ginkgo.AddReportEntry(testplan.ReadingEntry, reading)
}

// JudgeGateOff returns the reading c took, or why it took none: (a)
// rejected, Forbidden at spec.scheduling (or the intent annotation); (b)
// where allowed, accepted with the intent cleared from the stored object.
func JudgeGateOff(c GateOffCreate) (string, error) {
	if c.Err != nil || !c.ClearsAllowed {
		return ReadingRejects, CheckRejection(c.Err, Rejection{Paths: []string{"spec.scheduling"},
			Types: []field.ErrorType{field.ErrorTypeForbidden}, Annotation: c.Annotation})
	}
	hasIntent, err := c.Stored()
	if err != nil {
		return "", fmt.Errorf("reading the stored object: %w", err)
	}
	if hasIntent {
		return "", errors.New("with the gate off the apiserver neither rejected spec.scheduling (KEP-6277: +k8s:forbidden) nor cleared it on create (its PRR: \"Clears spec.scheduling on new creates\"): the stored object carries the intent")
	}
	return ReadingClears, nil
}

func unique(in []Reported) []Reported {
	var out []Reported
	for _, r := range in {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}
