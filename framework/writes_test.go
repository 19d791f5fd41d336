package framework

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

func podGroupObject(uid, rv string, minCount int64, mutate func(u *unstructured.Unstructured)) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion("scheduling.k8s.io/v1beta1")
	u.SetKind("PodGroup")
	u.SetNamespace("ns")
	u.SetName("pg")
	u.SetUID(k8stypes.UID("uid-" + uid))
	u.SetResourceVersion(rv)
	_ = unstructured.SetNestedField(u.Object, minCount, "spec", "schedulingPolicy", "gang", "minCount")
	if mutate != nil {
		mutate(u)
	}
	return u
}

// The history tells each Modified write's changed fields against the version
// it saw before, and the tally attributes them: a create, a spec write, a
// status-only write (the scheduler's), the delete and a write to the going
// object (the garbage collector's).
func TestTallyWritesAttributesByChangedFields(t *testing.T) {
	h := &WriteHistory{}
	h.record("podgroups", watch.Event{Type: watch.Added, Object: podGroupObject("a", "10", 3, nil)})
	h.record("podgroups", watch.Event{Type: watch.Modified, Object: podGroupObject("a", "11", 5, func(u *unstructured.Unstructured) {
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "anyone"}})
		u.SetGeneration(2)
	})})
	h.record("podgroups", watch.Event{Type: watch.Modified, Object: podGroupObject("a", "12", 5, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "PodGroupScheduled", "status": "True"}}, "status", "conditions")
	})})
	h.record("podgroups", watch.Event{Type: watch.Modified, Object: podGroupObject("a", "13", 5, func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "PodGroupScheduled", "status": "True"}}, "status", "conditions")
		u.SetAnnotations(map[string]string{"stamp": "1"})
	})})
	now := metav1.Now()
	going := func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "PodGroupScheduled", "status": "True"}}, "status", "conditions")
		u.SetAnnotations(map[string]string{"stamp": "1"})
		u.SetDeletionTimestamp(&now)
		u.SetFinalizers([]string{"f"})
	}
	h.record("podgroups", watch.Event{Type: watch.Modified, Object: podGroupObject("a", "14", 5, going)})
	h.record("podgroups", watch.Event{Type: watch.Deleted, Object: podGroupObject("a", "15", 5, going)})
	// An object that existed before the history: anything may have changed.
	h.record("podgroups", watch.Event{Type: watch.Modified, Object: podGroupObject("b", "16", 1, nil)})

	changes := h.sorted()
	if got, want := changes[1].Fields, PodGroupMinCountField; got != want {
		t.Errorf("minCount write: fields %q, want %q (resourceVersion, managedFields and generation are not fields a write sends)", got, want)
	}
	if got := changes[2]; got.Fields != "status" || !got.OnlyStatus() { // status absent before: the whole of it
		t.Errorf("status write: fields %q, OnlyStatus %t", got.Fields, got.OnlyStatus())
	}
	if got := changes[3]; got.Fields != "metadata.annotations" || got.OnlyStatus() || !got.Changed("metadata") {
		t.Errorf("annotation write: fields %q", got.Fields)
	}
	if got := changes[6]; got.Fields != FieldsUnknown || !got.Changed(PodGroupMinCountField) {
		t.Errorf("write of an object not seen before: fields %q, want %q, which may have changed anything", got.Fields, FieldsUnknown)
	}

	tally := TallyWrites(changes, "podgroups")
	names := func(cs []Change) []uint64 {
		var out []uint64
		for _, c := range cs {
			out = append(out, c.Revision)
		}
		return out
	}
	for what, got := range map[string][]uint64{"creates": names(tally.Creates), "updates": names(tally.Updates), "deletes": names(tally.Deletes), "others": names(tally.Others)} {
		want := map[string][]uint64{"creates": {10}, "updates": {11, 13, 16}, "deletes": {14}, "others": {12, 15}}[what]
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: revisions %v, want %v", what, got, want)
		}
	}
	if got := tally.UpdatesNotChanging(PodGroupMinCountField); len(got) != 1 || got[0].Revision != 13 {
		t.Errorf("updates not changing minCount: %v, want the annotation write (rv 13)", got)
	}
	if got := tally.Of("uid-a").Implementation(); got != 4 {
		t.Errorf("writes of uid-a attributed to the implementation: %d, want 4", got)
	}
}
