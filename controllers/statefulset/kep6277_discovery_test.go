package statefulset

import (
	"fmt"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/controllers/events"
	"github.com/workload-aware/apps-harness/controllers/internal/fakeapi"
)

// stScaleAround scales set up by one (creating a pod) and back down (deleting
// it), the two paths that sync minCount.
func stScaleAround(t *testing.T, e *stEnv, set *appsv1.StatefulSet, existing int) *appsv1.StatefulSet {
	t.Helper()
	set = stScale(e, set, int32(existing+1))
	e.mustCreatePod(stPod(set, existing, stRevision1))
	set = stScale(e, set, int32(existing))
	if err := e.deletePod(stPod(set, existing, "").Name); err != nil {
		t.Fatal(err)
	}
	return set
}

// TestKEP6277Discovery covers S-U11 to S-U18.
func TestKEP6277Discovery(t *testing.T) {
	t.Run("S-U11_discovery_by_reference_whatever_the_names", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		w := stWorkload("hand-named-workload", stRefTo(set), stTemplate("quorum", 3))
		e.Seed(w)
		pg := stPodGroup("totally-unrelated-name", w.Name, "quorum", 3)
		e.Seed(pg)
		// Decoys: other kinds or names in controllerRef, other templates or
		// Workloads in workloadRef.
		e.Seed(stWorkload("db-decoy-deployment", schedulingv1beta1.TypedLocalObjectReference{APIGroup: "apps", Kind: "Deployment", Name: "db"}, stTemplate("quorum", 3)))
		e.Seed(stWorkload("db-decoy-other-set", schedulingv1beta1.TypedLocalObjectReference{APIGroup: "apps", Kind: "StatefulSet", Name: "db2"}, stTemplate("quorum", 3)))
		e.Seed(stPodGroup("db-decoy-other-template", w.Name, "other", 3))
		e.Seed(stPodGroup("db-decoy-other-workload", "db-decoy-deployment", "quorum", 3))
		e.storeSet(set)
		e.Client.ClearActions()

		for i := range 3 {
			stCheckGrouped(t, e.mustCreatePod(stPod(set, i, stRevision1)), set, pg)
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("scheduling writes = %v, want none (discovered and used)", got)
		}
	})

	t.Run("S-U11_workload_discovered_podgroup_missing_is_created_from_its_template", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		w := stWorkload("hand-named-workload", stRefTo(set), stTemplate("quorum", 2))
		e.Seed(w)
		e.storeSet(set)
		e.Client.ClearActions()
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		if got, want := e.SchedulingWrites(), []string{"create podgroups"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("scheduling writes = %v, want %v", got, want)
		}
		pg := e.OnlyPodGroup()
		if pg.Spec.WorkloadRef == nil || pg.Spec.WorkloadRef.WorkloadName != w.Name || pg.Spec.WorkloadRef.TemplateName != "quorum" {
			t.Errorf("workloadRef = %+v, want {%s quorum}", pg.Spec.WorkloadRef, w.Name)
		}
		stCheckGrouped(t, pod, set, pg)
	})

	t.Run("S-U12_workload_without_podgroup_creates_only_the_podgroup", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		w := stManagedWorkload(t, set, stGang())
		e.Seed(w)
		e.storeSet(set)
		e.Client.ClearActions()
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		if got, want := e.Writes(), []string{"create podgroups", "create pods"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("writes = %v, want %v", got, want)
		}
		pg := e.OnlyPodGroup()
		if len(pg.OwnerReferences) != 2 || pg.OwnerReferences[1].UID != w.UID || pg.OwnerReferences[1].Name != w.Name {
			t.Errorf("PodGroup ownerReferences = %+v, want the StatefulSet and the existing Workload %s", pg.OwnerReferences, w.UID)
		}
		if len(e.StoredWorkloads()) != 1 {
			t.Errorf("%d Workloads, want the existing one only", len(e.StoredWorkloads()))
		}
		stCheckGrouped(t, pod, set, pg)
	})

	t.Run("S-U12_crash_between_workload_and_podgroup_recovers_without_duplicates", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		e.storeSet(set)
		e.Fail("create", "podgroups", fmt.Errorf("connection reset"))
		if _, err := e.createPod(stPod(set, 0, stRevision1)); err == nil {
			t.Fatal("pod created without its PodGroup")
		}
		if ev := e.Events(); !fakeapi.HasEvent(ev, "Warning "+events.WorkloadCreationFailed+" Error creating PodGroup") {
			t.Errorf("events = %v, want Warning %s about the PodGroup", ev, events.WorkloadCreationFailed)
		}
		e.Heal("create", "podgroups")
		// A fresh Reconciler (a restarted controller) over the same API.
		e.SyncCaches()
		e.r = NewReconciler(Options{Client: e.Client, StatefulSets: e.r.sets, Pods: e.r.pods, PodIndexer: e.pods, Scheduling: e.Sched, Recorder: e.Recorder, Gates: e.r.gates})
		e.cc = e.r.ControllerClient(e.Client)
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		if got, want := e.Writes(), []string{"create workloads", "create podgroups", "create podgroups", "create pods"}; !reflect.DeepEqual(got, want) {
			t.Errorf("writes = %v, want %v (one Workload create)", got, want)
		}
		stCheckGrouped(t, pod, set, e.OnlyPodGroup())
		if len(e.StoredWorkloads()) != 1 {
			t.Errorf("%d Workloads, want 1", len(e.StoredWorkloads()))
		}
	})

	t.Run("S-U12_retry_before_the_informer_sees_the_workload_creates_no_duplicate", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{laggingInformers: true})
		set := stSet(t, "db", 3, stGang())
		e.storeSet(set)
		e.Fail("create", "podgroups", fmt.Errorf("connection reset"))
		if _, err := e.createPod(stPod(set, 0, stRevision1)); err == nil {
			t.Fatal("pod created without its PodGroup")
		}
		e.Heal("create", "podgroups")
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		e.mustCreatePod(stPod(set, 1, stRevision1))
		if got, want := e.Writes(), []string{"create workloads", "create podgroups", "create podgroups", "create pods", "create pods"}; !reflect.DeepEqual(got, want) {
			t.Errorf("writes = %v, want %v (the controller's own writes stand in for the lagging informer)", got, want)
		}
		stCheckGrouped(t, pod, set, e.OnlyPodGroup())
		if len(e.StoredWorkloads()) != 1 {
			t.Errorf("%d Workloads, want 1", len(e.StoredWorkloads()))
		}
		// Scaling still updates with the current resourceVersions.
		set = stScale(e, set, 4)
		e.mustCreatePod(stPod(set, 2, stRevision1))
		if stTemplateMin(e.OnlyWorkload()) != 4 || stGangMin(e.OnlyPodGroup()) != 4 {
			t.Errorf("minCounts %d/%d, want 4/4", stTemplateMin(e.OnlyWorkload()), stGangMin(e.OnlyPodGroup()))
		}
	})

	t.Run("S-U13_pods_without_objects_nothing_created", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		e.storeSet(set)
		e.seedPod(stPod(set, 0, stRevision1))
		e.Client.ClearActions()
		stCheckUngrouped(t, e.mustCreatePod(stPod(set, 1, stRevision1)), set)
		if got := e.SchedulingCalls(); len(got) != 0 {
			t.Errorf("scheduling calls = %v, want none", got)
		}
	})

	t.Run("S-U13_terminal_pod_counts_as_a_pod", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		e.storeSet(set)
		done := stPod(set, 0, stRevision1)
		done.Status.Phase = corev1.PodSucceeded
		e.seedPod(done)
		e.Client.ClearActions()
		stCheckUngrouped(t, e.mustCreatePod(stPod(set, 1, stRevision1)), set)
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("scheduling writes = %v, want none", got)
		}
	})

	t.Run("S-U13_pods_of_another_statefulset_do_not_count", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		e.storeSet(set)
		other := stSet(t, "db", 3, stGang())
		other.UID = "sts-uid-db-previous"
		e.seedPod(stPod(other, 0, stRevision1)) // same name, other UID
		e.Client.ClearActions()
		e.mustCreatePod(stPod(set, 1, stRevision1))
		if got, want := e.SchedulingWrites(), []string{"create workloads", "create podgroups"}; !reflect.DeepEqual(got, want) {
			t.Errorf("scheduling writes = %v, want %v", got, want)
		}
	})

	t.Run("S-U13_pods_and_workload_without_podgroup_nothing_created", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		e.Seed(stManagedWorkload(t, set, stGang()))
		e.storeSet(set)
		e.seedPod(stPod(set, 0, stRevision1))
		e.Client.ClearActions()
		stCheckUngrouped(t, e.mustCreatePod(stPod(set, 1, stRevision1)), set)
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("scheduling writes = %v, want none", got)
		}
	})

	t.Run("S-U13_pods_and_both_objects_discovered_and_used", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		w := stManagedWorkload(t, set, stGang())
		e.Seed(w)
		pg, err := BuildPodGroup(set, w, "db", true, true)
		if err != nil {
			t.Fatal(err)
		}
		e.Seed(pg)
		e.storeSet(set)
		e.seedPod(Grouped(stPod(set, 0, stRevision1), pg))
		e.Client.ClearActions()
		stCheckGrouped(t, e.mustCreatePod(stPod(set, 1, stRevision1)), set, pg)
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("scheduling writes = %v, want none", got)
		}
	})

	t.Run("S-U14_two_workloads_are_ambiguous", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		// Both look controller-created, with a stale minCount, so any
		// mutation would show.
		stale := stSet(t, "db", 2, stGang())
		a := stManagedWorkload(t, stale, stGang())
		b := stManagedWorkload(t, stale, stGang())
		b.Name = "db-second"
		e.Seed(a)
		e.Seed(b)
		e.storeSet(set)
		e.Client.ClearActions()
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		stCheckUngrouped(t, pod, set)
		if err := e.deletePod(pod.Name); err != nil {
			t.Fatal(err)
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("scheduling writes = %v, want none", got)
		}
		if ev := e.Events(); !fakeapi.HasEvent(ev, "Warning "+events.AmbiguousWorkload) {
			t.Errorf("events = %v, want Warning %s", ev, events.AmbiguousWorkload)
		}
		if stTemplateMin(e.GetWorkload(a.Name)) != 2 || stTemplateMin(e.GetWorkload(b.Name)) != 2 || len(e.StoredPodGroups()) != 0 {
			t.Errorf("ambiguous Workloads mutated or PodGroups created")
		}
	})

	t.Run("S-U14_two_podgroups_are_ambiguous", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		w := stWorkload("db-byo", stRefTo(set), stTemplate("db", 3))
		e.Seed(w)
		e.Seed(stPodGroup("db-one", w.Name, "db", 3))
		e.Seed(stPodGroup("db-two", w.Name, "db", 3))
		e.storeSet(set)
		e.Client.ClearActions()
		stCheckUngrouped(t, e.mustCreatePod(stPod(set, 0, stRevision1)), set)
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("scheduling writes = %v, want none", got)
		}
		if ev := e.Events(); !fakeapi.HasEvent(ev, "Warning "+events.AmbiguousPodGroup) {
			t.Errorf("events = %v, want Warning %s", ev, events.AmbiguousPodGroup)
		}
	})

	byoWorkloads := map[string]func(set *appsv1.StatefulSet) *schedulingv1beta1.Workload{
		"no_annotation_no_owner": func(set *appsv1.StatefulSet) *schedulingv1beta1.Workload {
			return stWorkload("user-workload", stRefTo(set), stTemplate("db", 3))
		},
		"owner_reference_without_annotation": func(set *appsv1.StatefulSet) *schedulingv1beta1.Workload {
			w := stWorkload("user-workload", stRefTo(set), stTemplate("db", 3))
			w.OwnerReferences = []metav1.OwnerReference{*stSetRef(set)}
			return w
		},
		"annotation_without_owner_reference": func(set *appsv1.StatefulSet) *schedulingv1beta1.Workload {
			w := stWorkload("user-workload", stRefTo(set), stTemplate("db", 3))
			w.Annotations = map[string]string{ManagedByAnnotation: ManagedByValue}
			return w
		},
	}
	for name, mk := range byoWorkloads {
		t.Run("S-U15_byo_workload_and_podgroup_used_as_is_"+name, func(t *testing.T) {
			e := stNewEnv(t, stEnvOptions{})
			set := stSet(t, "db", 3, stGang())
			w := mk(set)
			e.Seed(w)
			pg := stPodGroup("user-podgroup", w.Name, "db", 3)
			pg.Annotations = w.Annotations
			pg.OwnerReferences = w.OwnerReferences
			e.Seed(pg)
			e.storeSet(set)
			e.Client.ClearActions()
			for i := range 3 {
				stCheckGrouped(t, e.mustCreatePod(stPod(set, i, stRevision1)), set, pg)
			}
			// Scale up and down, then scale to zero.
			set = stScaleAround(t, e, set, 3)
			stScale(e, set, 0)
			for _, name := range []string{"db-2", "db-1", "db-0"} {
				if err := e.deletePod(name); err != nil {
					t.Fatal(err)
				}
			}
			if got := e.SchedulingCalls(); len(got) != 0 {
				t.Errorf("scheduling calls = %v, want none", got)
			}
			if got := e.GetWorkload(w.Name); !equality.Semantic.DeepEqual(got, w) {
				t.Errorf("Workload changed:\n got %+v\nwant %+v", got, w)
			}
			if got := e.GetPodGroup(pg.Name); !equality.Semantic.DeepEqual(got, pg) {
				t.Errorf("PodGroup changed:\n got %+v\nwant %+v", got, pg)
			}
		})
	}

	t.Run("S-U15_podgroup_managed_by_another_statefulset_is_not_mutated", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		w := stWorkload("user-workload", stRefTo(set), stTemplate("db", 5))
		e.Seed(w)
		other := stSet(t, "other", 1, nil)
		pg := stPodGroup("user-podgroup", w.Name, "db", 3)
		pg.Annotations = map[string]string{ManagedByAnnotation: ManagedByValue}
		pg.OwnerReferences = []metav1.OwnerReference{*stSetRef(other)}
		e.Seed(pg)
		e.storeSet(set)
		e.Client.ClearActions()
		stCheckGrouped(t, e.mustCreatePod(stPod(set, 0, stRevision1)), set, pg)
		if got := e.SchedulingCalls(); len(got) != 0 {
			t.Errorf("scheduling calls = %v, want none (template says 5, PodGroup 3, but it is not ours)", got)
		}
	})

	t.Run("S-U16_byo_workload_controller_podgroup_syncs_from_the_template", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 5, stGang())
		w := stWorkload("user-workload", stRefTo(set), stTemplate("quorum", 2))
		e.Seed(w)
		e.storeSet(set)
		e.Client.ClearActions()
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		pg := e.OnlyPodGroup()
		if got, want := e.SchedulingWrites(), []string{"create podgroups"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("scheduling writes = %v, want %v", got, want)
		}
		if stGangMin(pg) != 2 {
			t.Errorf("PodGroup minCount = %d, want the template's 2 (not replicas 5)", stGangMin(pg))
		}
		if len(pg.OwnerReferences) != 1 || metav1.GetControllerOf(pg) == nil || metav1.GetControllerOf(pg).UID != set.UID {
			t.Errorf("PodGroup ownerReferences = %+v, want only the StatefulSet (no reference to a Workload it did not create)", pg.OwnerReferences)
		}
		stCheckGrouped(t, pod, set, pg)
		for i := 1; i < 5; i++ {
			e.mustCreatePod(stPod(set, i, stRevision1))
		}
		e.SyncCaches()
		// The Workload's owner changes its template; scaling the set follows it
		// for the PodGroup only.
		w = e.GetWorkload(w.Name)
		w.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount = 4
		e.UpdateBehindTheBack(w)
		e.Client.ClearActions()
		set = stScale(e, set, 7)
		e.mustCreatePod(stPod(set, 5, stRevision1))
		if got, want := e.SchedulingWrites(), []string{"update podgroups"}; !reflect.DeepEqual(got, want) {
			t.Errorf("scheduling writes = %v, want %v", got, want)
		}
		if stGangMin(e.GetPodGroup(pg.Name)) != 4 {
			t.Errorf("PodGroup minCount = %d, want the template's 4", stGangMin(e.GetPodGroup(pg.Name)))
		}
		if got := e.GetWorkload(w.Name); !equality.Semantic.DeepEqual(got, w) {
			t.Errorf("the user's Workload was mutated: %+v", got.Spec)
		}
		// Scaling down leaves both where the template says.
		stScale(e, set, 1)
		if err := e.deletePod("db-5"); err != nil {
			t.Fatal(err)
		}
		if n := e.Count("update", "workloads"); n != 0 || stGangMin(e.GetPodGroup(pg.Name)) != 4 {
			t.Errorf("%d Workload updates, PodGroup minCount %d; want 0 and 4", n, stGangMin(e.GetPodGroup(pg.Name)))
		}
	})

	t.Run("S-U17_byo_podgroup_with_byo_workload_never_mutated", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		w := stWorkload("user-workload", stRefTo(set), stTemplate("db", 3))
		e.Seed(w)
		pg := stPodGroup("user-podgroup", w.Name, "db", 3)
		e.Seed(pg)
		e.storeSet(set)
		e.createAll(set, 3, stRevision1)
		e.Client.ClearActions()
		set = stScale(e, set, 6)
		for i := 3; i < 6; i++ {
			stCheckGrouped(t, e.mustCreatePod(stPod(set, i, stRevision1)), set, pg)
		}
		stScale(e, set, 1)
		for i := 5; i >= 1; i-- {
			if err := e.deletePod(fmt.Sprintf("db-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		if got := e.SchedulingCalls(); len(got) != 0 {
			t.Errorf("scheduling calls = %v, want none", got)
		}
		if !equality.Semantic.DeepEqual(e.GetWorkload(w.Name), w) || !equality.Semantic.DeepEqual(e.GetPodGroup(pg.Name), pg) {
			t.Errorf("BYO objects mutated")
		}
	})

	t.Run("S-U17_byo_podgroup_of_controller_workload_never_mutated", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		w := stManagedWorkload(t, set, stGang())
		e.Seed(w)
		pg := stPodGroup("user-podgroup", w.Name, "db", 3)
		e.Seed(pg)
		e.storeSet(set)
		e.createAll(set, 3, stRevision1)
		e.Client.ClearActions()
		set = stScale(e, set, 4)
		stCheckGrouped(t, e.mustCreatePod(stPod(set, 3, stRevision1)), set, pg)
		if got, want := e.SchedulingWrites(), []string{"update workloads"}; !reflect.DeepEqual(got, want) {
			t.Errorf("scheduling writes = %v, want %v (its own Workload only)", got, want)
		}
		if !equality.Semantic.DeepEqual(e.GetPodGroup(pg.Name), pg) {
			t.Errorf("BYO PodGroup mutated")
		}
	})

	for _, n := range []int{0, 2} {
		t.Run(fmt.Sprintf("S-U18_workload_with_%d_templates_ignored_with_event", n), func(t *testing.T) {
			e := stNewEnv(t, stEnvOptions{})
			set := stSet(t, "db", 3, stGang())
			var tmpls []schedulingv1beta1.PodGroupTemplate
			for i := range n {
				tmpls = append(tmpls, stTemplate(fmt.Sprintf("t%d", i), 3))
			}
			w := stWorkload("user-workload", stRefTo(set), tmpls...)
			e.Seed(w)
			e.storeSet(set)
			e.Client.ClearActions()
			stCheckUngrouped(t, e.mustCreatePod(stPod(set, 0, stRevision1)), set)
			if got := e.SchedulingWrites(); len(got) != 0 {
				t.Errorf("scheduling writes = %v, want none", got)
			}
			if ev := e.Events(); !fakeapi.HasEvent(ev, "Warning "+events.UnusableWorkload) {
				t.Errorf("events = %v, want Warning %s", ev, events.UnusableWorkload)
			}
			if !equality.Semantic.DeepEqual(e.GetWorkload(w.Name), w) {
				t.Errorf("Workload mutated")
			}
		})
	}
}

// stDelegatedSet is a child StatefulSet of the parent LeaderWorkerSet, with
// the KEP-6089 annotations given.
func stDelegatedSet(t *testing.T, name string, replicas int32, annotations map[string]string) *appsv1.StatefulSet {
	t.Helper()
	set := stSet(t, name, replicas, stGang())
	set.OwnerReferences = []metav1.OwnerReference{stParentRef()}
	for k, v := range annotations {
		set.Annotations[k] = v
	}
	return set
}

func stParentWorkload() *schedulingv1beta1.Workload {
	return stWorkload("llm-parent", stParentWorkloadRef(), stTemplate("leader", 1), stTemplate("worker", 4))
}

// stCompositeParentWorkload is a LeaderWorkerSet-shaped parent: a composite
// "replica" template whose leaves are "leader" and, one level further down
// inside "workers", "worker" (gang of 4).
func stCompositeParentWorkload() *schedulingv1beta1.Workload {
	w := stWorkload("llm-parent", stParentWorkloadRef())
	w.Spec.CompositePodGroupTemplates = []schedulingv1beta1.CompositePodGroupTemplate{{
		Name:              "replica",
		SchedulingPolicy:  schedulingv1beta1.CompositePodGroupSchedulingPolicy{Basic: &schedulingv1beta1.CompositeBasicSchedulingPolicy{}},
		PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{stTemplate("leader", 1)},
		CompositePodGroupTemplates: []schedulingv1beta1.CompositePodGroupTemplate{{
			Name:              "workers",
			SchedulingPolicy:  schedulingv1beta1.CompositePodGroupSchedulingPolicy{Basic: &schedulingv1beta1.CompositeBasicSchedulingPolicy{}},
			PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{stTemplate("worker", 4)},
		}},
	}}
	return w
}

// TestKEP6277Composition covers S-U19 to S-U23.
func TestKEP6277Composition(t *testing.T) {
	t.Run("S-U19_podgroup_from_the_parents_named_template", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		parent := stParentWorkload()
		e.Seed(parent)
		set := stDelegatedSet(t, "llm-workers", 4, map[string]string{GroupTemplateNameAnnotation: "worker"})
		e.storeSet(set)
		e.Client.ClearActions()
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		if got, want := e.Writes(), []string{"create podgroups", "create pods"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("writes = %v, want %v (no Workload of its own)", got, want)
		}
		pg := e.OnlyPodGroup()
		if want := (&schedulingv1beta1.WorkloadReference{WorkloadName: parent.Name, TemplateName: "worker"}); !equality.Semantic.DeepEqual(pg.Spec.WorkloadRef, want) {
			t.Errorf("workloadRef = %+v, want %+v", pg.Spec.WorkloadRef, want)
		}
		if stGangMin(pg) != 4 {
			t.Errorf("PodGroup minCount = %d, want the worker template's 4", stGangMin(pg))
		}
		if len(pg.OwnerReferences) != 1 {
			t.Fatalf("PodGroup ownerReferences = %+v, want only the StatefulSet (none to the parent's Workload)", pg.OwnerReferences)
		}
		stCheckSetRef(t, "PodGroup", pg.OwnerReferences[0], set)
		if pg.Annotations[ManagedByAnnotation] != ManagedByValue || !reflect.DeepEqual(pg.Finalizers, []string{PodGroupProtectionFinalizer}) {
			t.Errorf("PodGroup annotations %v finalizers %v", pg.Annotations, pg.Finalizers)
		}
		if pg.Spec.ParentCompositePodGroupName != nil {
			t.Errorf("parentCompositePodGroupName = %q, want unset without the annotation", *pg.Spec.ParentCompositePodGroupName)
		}
		stCheckGrouped(t, pod, set, pg)
		if !equality.Semantic.DeepEqual(e.GetWorkload(parent.Name), parent) {
			t.Errorf("the parent's Workload was mutated")
		}
	})

	t.Run("S-U19_existing_delegated_podgroup_reused", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		parent := stParentWorkload()
		e.Seed(parent)
		set := stDelegatedSet(t, "llm-workers", 4, map[string]string{GroupTemplateNameAnnotation: "worker"})
		e.storeSet(set)
		e.createAll(set, 2, stRevision1)
		e.SyncCaches()
		pg := e.OnlyPodGroup()
		e.Client.ClearActions()
		stCheckGrouped(t, e.mustCreatePod(stPod(set, 2, stRevision1)), set, pg)
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("scheduling writes = %v, want none", got)
		}
	})

	// Several children of one parent name the same template, each under its
	// own parent CompositePodGroup (a LeaderWorkerSet's worker StatefulSets,
	// one per replica; the reconciler filters delegated PodGroups by
	// controller for that reason): each must get a PodGroup of its own.
	t.Run("S-U19_sibling_statefulsets_sharing_a_template_get_their_own_podgroups", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		parent := stCompositeParentWorkload()
		e.Seed(parent)
		a := stDelegatedSet(t, "llm-workers-0", 4, map[string]string{GroupTemplateNameAnnotation: "worker", ParentCompositePodGroupAnnotation: "llm-group-0"})
		b := stDelegatedSet(t, "llm-workers-1", 4, map[string]string{GroupTemplateNameAnnotation: "worker", ParentCompositePodGroupAnnotation: "llm-group-1"})
		e.storeSet(a)
		e.storeSet(b)
		podA := e.mustCreatePod(stPod(a, 0, stRevision1))
		e.SyncCaches()
		podB, err := e.createPod(stPod(b, 0, stRevision1))
		if err != nil {
			t.Fatalf("second child's pod: %v (events %v)", err, e.Events())
		}
		pgs := e.StoredPodGroups()
		if len(pgs) != 2 {
			t.Fatalf("%d PodGroups, want one per child", len(pgs))
		}
		ga, gb := ptr.Deref(podA.Spec.SchedulingGroup, corev1.PodSchedulingGroup{}), ptr.Deref(podB.Spec.SchedulingGroup, corev1.PodSchedulingGroup{})
		if ga.PodGroupName == nil || gb.PodGroupName == nil || *ga.PodGroupName == *gb.PodGroupName {
			t.Errorf("pods' podGroupNames %v / %v, want two distinct PodGroups", ga.PodGroupName, gb.PodGroupName)
		}
	})

	t.Run("S-U19_S-U20_template_nested_in_the_parents_composite_tree", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		parent := stCompositeParentWorkload()
		e.Seed(parent)
		set := stDelegatedSet(t, "llm-workers", 4, map[string]string{
			GroupTemplateNameAnnotation:       "worker",
			ParentCompositePodGroupAnnotation: "llm-replica-0-workers",
		})
		e.storeSet(set)
		e.Client.ClearActions()
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		if got, want := e.Writes(), []string{"create podgroups", "create pods"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("writes = %v, want %v", got, want)
		}
		pg := e.OnlyPodGroup()
		if want := (&schedulingv1beta1.WorkloadReference{WorkloadName: parent.Name, TemplateName: "worker"}); !equality.Semantic.DeepEqual(pg.Spec.WorkloadRef, want) {
			t.Errorf("workloadRef = %+v, want %+v", pg.Spec.WorkloadRef, want)
		}
		if stGangMin(pg) != 4 || ptr.Deref(pg.Spec.ParentCompositePodGroupName, "") != "llm-replica-0-workers" {
			t.Errorf("PodGroup minCount %d parent %v, want 4 and llm-replica-0-workers", stGangMin(pg), pg.Spec.ParentCompositePodGroupName)
		}
		if len(pg.OwnerReferences) != 1 || metav1.GetControllerOf(pg).UID != set.UID {
			t.Errorf("PodGroup ownerReferences = %+v, want only the StatefulSet", pg.OwnerReferences)
		}
		stCheckGrouped(t, pod, set, pg)
		// The parent lowers the nested template; the child's PodGroup follows.
		for i := 1; i < 4; i++ {
			e.mustCreatePod(stPod(set, i, stRevision1))
		}
		e.SyncCaches()
		parent = e.GetWorkload(parent.Name)
		parent.Spec.CompositePodGroupTemplates[0].CompositePodGroupTemplates[0].PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount = 3
		e.UpdateBehindTheBack(parent)
		stScale(e, set, 3)
		e.Client.ClearActions()
		if err := e.deletePod("llm-workers-3"); err != nil {
			t.Fatal(err)
		}
		if got, want := e.Writes(), []string{"update podgroups", "delete pods"}; !reflect.DeepEqual(got, want) {
			t.Errorf("writes = %v, want %v", got, want)
		}
		if stGangMin(e.GetPodGroup(pg.Name)) != 3 || !equality.Semantic.DeepEqual(e.GetWorkload(parent.Name), parent) {
			t.Errorf("PodGroup minCount %d, want 3 from the nested template (and the parent untouched)", stGangMin(e.GetPodGroup(pg.Name)))
		}
	})

	t.Run("S-U23_composite_name_is_not_a_podgroup_template", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		e.Seed(stCompositeParentWorkload())
		set := stDelegatedSet(t, "llm-workers", 4, map[string]string{GroupTemplateNameAnnotation: "workers"})
		e.storeSet(set)
		e.Client.ClearActions()
		stCheckUngrouped(t, e.mustCreatePod(stPod(set, 0, stRevision1)), set)
		if got, want := e.Writes(), []string{"create pods"}; !reflect.DeepEqual(got, want) {
			t.Errorf("writes = %v, want %v", got, want)
		}
		if ev := e.Events(); !fakeapi.HasEvent(ev, "Warning "+events.UnresolvedParentWorkload) {
			t.Errorf("events = %v, want Warning %s", ev, events.UnresolvedParentWorkload)
		}
	})

	t.Run("S-U20_parent_compositepodgroup_linked", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		e.Seed(stParentWorkload())
		set := stDelegatedSet(t, "llm-workers", 4, map[string]string{
			GroupTemplateNameAnnotation:       "worker",
			ParentCompositePodGroupAnnotation: "llm-group-0",
		})
		e.storeSet(set)
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		pg := e.OnlyPodGroup()
		if got := ptr.Deref(pg.Spec.ParentCompositePodGroupName, ""); got != "llm-group-0" {
			t.Errorf("parentCompositePodGroupName = %q, want llm-group-0", got)
		}
		stCheckGrouped(t, pod, set, pg)
		if len(e.StoredWorkloads()) != 1 {
			t.Errorf("%d Workloads, want only the parent's", len(e.StoredWorkloads()))
		}
	})

	t.Run("S-U21_parent_owner_without_annotation_manages_its_own", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		parent := stParentWorkload()
		e.Seed(parent)
		set := stDelegatedSet(t, "llm-workers", 4, nil)
		e.storeSet(set)
		e.Client.ClearActions()
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		if got, want := e.Writes(), []string{"create workloads", "create podgroups", "create pods"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("writes = %v, want %v", got, want)
		}
		w := e.GetWorkload(WorkloadName(set))
		if !equality.Semantic.DeepEqual(w.Spec.ControllerRef, ptr.To(stRefTo(set))) || !CreatedByController(w, set) {
			t.Errorf("own Workload %+v, want controllerRef to the StatefulSet, created by the controller", w)
		}
		pg := e.GetPodGroup(PodGroupName(w.Name, TemplateName(set)))
		stCheckGrouped(t, pod, set, pg)
		if pg.Spec.WorkloadRef.WorkloadName != w.Name || len(pg.OwnerReferences) != 2 {
			t.Errorf("PodGroup %+v, want it from the own Workload, owned by it", pg)
		}
		if !equality.Semantic.DeepEqual(e.GetWorkload(parent.Name), parent) {
			t.Errorf("the parent's Workload was mutated")
		}
	})

	for name, owners := range map[string][]metav1.OwnerReference{
		"no_owner":             nil,
		"non_controller_owner": {{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet", Name: "llm", UID: "lws-uid"}},
	} {
		t.Run("S-U22_annotation_without_parent_controller_"+name, func(t *testing.T) {
			e := stNewEnv(t, stEnvOptions{})
			e.Seed(stParentWorkload())
			set := stSet(t, "llm-workers", 4, stGang())
			set.Annotations[GroupTemplateNameAnnotation] = "worker"
			set.OwnerReferences = owners
			e.storeSet(set)
			e.Client.ClearActions()
			pod := e.mustCreatePod(stPod(set, 0, stRevision1))
			if got, want := e.Writes(), []string{"create workloads", "create podgroups", "create pods"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("writes = %v, want %v", got, want)
			}
			w := e.GetWorkload(WorkloadName(set))
			pg := e.GetPodGroup(PodGroupName(w.Name, TemplateName(set)))
			stCheckGrouped(t, pod, set, pg)
			if ev := e.Events(); !fakeapi.HasEvent(ev, "Warning "+events.GroupTemplateNameIgnored) {
				t.Errorf("events = %v, want Warning %s", ev, events.GroupTemplateNameIgnored)
			}
		})
	}

	for _, tc := range []struct {
		name      string
		workloads []*schedulingv1beta1.Workload
	}{
		{"S-U23_parent_workload_missing", nil},
		{"S-U23_parent_workload_ambiguous", []*schedulingv1beta1.Workload{
			stParentWorkload(),
			stWorkload("llm-parent-2", stParentWorkloadRef(), stTemplate("worker", 4)),
		}},
		{"S-U23_parent_template_missing", []*schedulingv1beta1.Workload{
			stWorkload("llm-parent", stParentWorkloadRef(), stTemplate("leader", 1), stTemplate("workers", 4)),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := stNewEnv(t, stEnvOptions{})
			for _, w := range tc.workloads {
				e.Seed(w)
			}
			// The child's own would-be Workload must not appear either.
			set := stDelegatedSet(t, "llm-workers", 4, map[string]string{GroupTemplateNameAnnotation: "worker"})
			e.storeSet(set)
			e.Client.ClearActions()
			pod := e.mustCreatePod(stPod(set, 0, stRevision1))
			stCheckUngrouped(t, pod, set)
			if got, want := e.Writes(), []string{"create pods"}; !reflect.DeepEqual(got, want) {
				t.Errorf("writes = %v, want %v (no Workload, no PodGroup)", got, want)
			}
			if ev := e.Events(); !fakeapi.HasEvent(ev, "Warning "+events.UnresolvedParentWorkload) {
				t.Errorf("events = %v, want Warning %s", ev, events.UnresolvedParentWorkload)
			}
			for _, w := range tc.workloads {
				if !equality.Semantic.DeepEqual(e.GetWorkload(w.Name), w) {
					t.Errorf("Workload %s mutated", w.Name)
				}
			}
		})
	}

	t.Run("S-U16_parent_workload_delegated_podgroup_follows_the_template", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		parent := stParentWorkload()
		e.Seed(parent)
		set := stDelegatedSet(t, "llm-workers", 4, map[string]string{GroupTemplateNameAnnotation: "worker"})
		e.storeSet(set)
		e.createAll(set, 4, stRevision1)
		e.SyncCaches()
		pg := e.OnlyPodGroup()
		e.Client.ClearActions()
		// Scaling the child alone changes nothing: the template is authoritative.
		stScale(e, set, 2)
		if err := e.deletePod("llm-workers-3"); err != nil {
			t.Fatal(err)
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("scheduling writes = %v, want none", got)
		}
		// The parent lowers its template first; the next delete follows it.
		parent = e.GetWorkload(parent.Name)
		parent.Spec.PodGroupTemplates[1].SchedulingPolicy.Gang.MinCount = 2
		e.UpdateBehindTheBack(parent)
		if err := e.deletePod("llm-workers-2"); err != nil {
			t.Fatal(err)
		}
		if got, want := e.Writes(), []string{"delete pods", "update podgroups", "delete pods"}; !reflect.DeepEqual(got, want) {
			t.Errorf("writes = %v, want %v", got, want)
		}
		if stGangMin(e.GetPodGroup(pg.Name)) != 2 {
			t.Errorf("delegated PodGroup minCount = %d, want the template's 2", stGangMin(e.GetPodGroup(pg.Name)))
		}
		if !equality.Semantic.DeepEqual(e.GetWorkload(parent.Name), parent) {
			t.Errorf("the parent's Workload was mutated")
		}
	})
}
