package statefulset

import (
	"slices"
	"testing"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workload-aware/apps-harness/controllers/objcache"
)

func indexTestPG(name, uid, rv, workload string) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), ResourceVersion: rv},
		Spec:       schedulingv1beta1.PodGroupSpec{WorkloadRef: &schedulingv1beta1.WorkloadReference{WorkloadName: workload, TemplateName: "t"}},
	}
}

// TestFreshestKeepsTheNewerCopy: the index preselects from the informer,
// so freshest must still let a newer own write win over an indexed copy,
// add own writes the informer has not seen, and let a newer informer copy
// (one the index did not return because it no longer matches) win over a
// stale own write.
func TestFreshestKeepsTheNewerCopy(t *testing.T) {
	var writes objcache.Writes[*schedulingv1beta1.PodGroup]
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }
	// a: indexed at rv 10, own write at rv 12 -> the own write.
	writes.Store(key("a"), indexTestPG("a", "ua", "12", "w-own"))
	// b: own write only (the informer lags) -> the own write.
	writes.Store(key("b"), indexTestPG("b", "ub", "20", "w"))
	// c: own write at rv 30, informer already at rv 31 and pointing
	// elsewhere (so not indexed under w) -> the informer's copy.
	writes.Store(key("c"), indexTestPG("c", "uc", "30", "w"))
	informer := map[string]*schedulingv1beta1.PodGroup{"a": indexTestPG("a", "ua", "10", "w"), "c": indexTestPG("c", "uc", "31", "other")}
	cached := func(name string) (*schedulingv1beta1.PodGroup, bool) { pg, ok := informer[name]; return pg, ok }

	got := freshest([]*schedulingv1beta1.PodGroup{informer["a"]}, writes.Pending("ns"), cached, &writes)
	byName := map[string]string{}
	for _, pg := range got {
		byName[pg.Name] = pg.ResourceVersion + " " + pg.Spec.WorkloadRef.WorkloadName
	}
	want := map[string]string{"a": "12 w-own", "b": "20 w", "c": "31 other"}
	for name, w := range want {
		if byName[name] != w {
			t.Errorf("%s: got %q, want %q (all: %v)", name, byName[name], w, byName)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d objects, want %d: %v", len(got), len(want), byName)
	}
}

// TestSchedulingIndexKeys: objects are found under the reference they
// carry, and only there.
func TestSchedulingIndexKeys(t *testing.T) {
	ref := schedulingv1beta1.TypedLocalObjectReference{APIGroup: "apps", Kind: "StatefulSet", Name: "web"}
	keys := []string{
		controllerRefKey("ns", ref),
		controllerRefKey("ns", schedulingv1beta1.TypedLocalObjectReference{APIGroup: "apps", Kind: "StatefulSet", Name: "web2"}),
		controllerRefKey("other", ref),
		controllerRefKey("ns", schedulingv1beta1.TypedLocalObjectReference{APIGroup: "apps", Kind: "Deployment", Name: "web"}),
		workloadRefKey("ns", "w", "t"),
		workloadRefKey("ns", "w", "t2"),
		workloadRefKey("ns", "w2", "t"),
	}
	slices.Sort(keys)
	if len(slices.Compact(keys)) != 7 {
		t.Errorf("index keys collide: %v", keys)
	}
}
