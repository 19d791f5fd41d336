package framework

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// managedFields tell who sent a field, which the object itself cannot: the
// apiserver computes a create's entry from the request before mutating
// admission runs (k8s.io/apiserver endpoints/handlers/create.go), so a field
// an admission plugin added belongs to no manager, and an update's entry
// claims only the fields it changed. A spec uses this to tell a field the
// implementation wrote from one the platform filled in.

// FieldSetter is one managedFields entry: the field manager (the client's
// fieldManager, else the first word of its User-Agent), the kind of write and
// the subresource it went through.
type FieldSetter struct {
	Manager     string
	Operation   metav1.ManagedFieldsOperationType
	Subresource string
}

func (s FieldSetter) String() string {
	if s.Subresource != "" {
		return fmt.Sprintf("%s (%s /%s)", s.Manager, s.Operation, s.Subresource)
	}
	return fmt.Sprintf("%s (%s)", s.Manager, s.Operation)
}

// ManagersThatSet returns the managedFields entries of obj that own the field
// at path, in the fieldsV1 encoding ("f:<name>", "v:<value>", "k:<keys>");
// FinalizerField and OwnerReferenceField build the common ones.
func ManagersThatSet(obj metav1.Object, path ...string) []FieldSetter {
	var out []FieldSetter
	for _, e := range obj.GetManagedFields() {
		if e.FieldsV1 == nil {
			continue
		}
		var node map[string]any
		if json.Unmarshal(e.FieldsV1.Raw, &node) != nil {
			continue
		}
		found := true
		for _, p := range path {
			next, ok := node[p].(map[string]any)
			if !ok {
				found = false
				break
			}
			node = next
		}
		if found {
			out = append(out, FieldSetter{Manager: e.Manager, Operation: e.Operation, Subresource: e.Subresource})
		}
	}
	return out
}

// FinalizerField is the fieldsV1 path of finalizer in metadata.finalizers, a
// set: its members are keyed by their JSON value.
func FinalizerField(finalizer string) []string {
	return []string{"f:metadata", "f:finalizers", "v:" + compactJSON(finalizer)}
}

// OwnerReferenceField is the fieldsV1 path of the ownerReference to uid:
// metadata.ownerReferences is a list keyed by uid.
func OwnerReferenceField(uid types.UID) []string {
	return []string{"f:metadata", "f:ownerReferences", "k:" + compactJSON(map[string]string{"uid": string(uid)})}
}

// DescribeManagedFields prints every managedFields entry of obj, one a line,
// with the fields it owns, for a spec's log and report.
func DescribeManagedFields(obj metav1.Object) string {
	var b strings.Builder
	for _, e := range obj.GetManagedFields() {
		s := FieldSetter{Manager: e.Manager, Operation: e.Operation, Subresource: e.Subresource}
		at, fields := "", "(no fields)"
		if e.Time != nil {
			at = " at " + e.Time.UTC().Format(time.RFC3339)
		}
		if e.FieldsV1 != nil {
			fields = string(e.FieldsV1.Raw)
		}
		fmt.Fprintf(&b, "%s%s: %s\n", s, at, fields)
	}
	return b.String()
}

// compactJSON encodes v as structured-merge-diff keys it: compact, without
// HTML escaping.
func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("encoding %v: %v", v, err)) // strings and string maps always encode
	}
	return strings.TrimSuffix(b.String(), "\n")
}
