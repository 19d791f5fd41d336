package statefulset

import (
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/intent"
	"github.com/workload-aware/apps-harness/controllers/events"
	"github.com/workload-aware/apps-harness/controllers/internal/fakeapi"
)

// TestKEP6277Creation covers S-U1 (ordering, opt-out), S-U2 and S-U3 (field
// mapping), S-U4 (pods join the PodGroup), S-U10 (ownership) and S-P9.
func TestKEP6277Creation(t *testing.T) {
	t.Run("S-U1_workload_then_podgroup_then_pod", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		e.storeSet(set)
		e.Client.ClearActions()

		e.mustCreatePod(stPod(set, 0, stRevision1))
		if got, want := e.Writes(), []string{"create workloads", "create podgroups", "create pods"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("writes = %v, want %v", got, want)
		}
		// The rest of the pods reuse them, before and after the informers catch up.
		e.mustCreatePod(stPod(set, 1, stRevision1))
		e.SyncCaches()
		e.mustCreatePod(stPod(set, 2, stRevision1))
		want := []string{"create workloads", "create podgroups", "create pods", "create pods", "create pods"}
		if got := e.Writes(); !reflect.DeepEqual(got, want) {
			t.Errorf("writes = %v, want %v", got, want)
		}
		if len(e.StoredWorkloads()) != 1 || len(e.StoredPodGroups()) != 1 {
			t.Errorf("%d Workloads and %d PodGroups, want one each", len(e.StoredWorkloads()), len(e.StoredPodGroups()))
		}
	})

	t.Run("S-U1_parallel_burst_creates_each_object_once", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 8, stGang())
		e.storeSet(set)
		e.Client.ClearActions()
		// Parallel pod management creates pods concurrently, before the pod
		// informer has any of them.
		var wg sync.WaitGroup
		created := make([]*corev1.Pod, 8)
		errs := make([]error, 8)
		for i := range 8 {
			wg.Go(func() {
				created[i], errs[i] = e.cc.CoreV1().Pods(stNS).Create(e.Ctx, stPod(set, i, stRevision1), metav1.CreateOptions{})
			})
		}
		wg.Wait()
		if e.Count("create", "workloads") != 1 || e.Count("create", "podgroups") != 1 {
			t.Errorf("writes = %v, want one Workload and one PodGroup create", e.Writes())
		}
		pg := e.OnlyPodGroup()
		for i := range 8 {
			if errs[i] != nil {
				t.Errorf("pod %d: %v", i, errs[i])
				continue
			}
			stCheckGrouped(t, created[i], set, pg)
		}
	})

	for _, tc := range []struct {
		name    string
		cfg     *intent.StatefulSetSchedulingConfiguration
		gateOff bool
	}{
		{"S-U1_no_intent_no_scheduling_objects", nil, false},
		{"S-U1_gate_off_no_scheduling_objects", stFull(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := stNewEnv(t, stEnvOptions{gateOff: tc.gateOff})
			set := stSet(t, "db", 3, tc.cfg)
			e.storeSet(set)
			e.Client.ClearActions()
			for i := range 3 {
				stCheckUngrouped(t, e.mustCreatePod(stPod(set, i, stRevision1)), set)
			}
			set = set.DeepCopy()
			set.Spec.Replicas = ptr.To[int32](1)
			e.storeSet(set)
			if err := e.deletePod("db-2"); err != nil {
				t.Fatal(err)
			}
			if got := e.SchedulingCalls(); len(got) != 0 {
				t.Errorf("scheduling.k8s.io calls = %v, want none", got)
			}
			if got, want := e.Writes(), []string{"create pods", "create pods", "create pods", "delete pods"}; !reflect.DeepEqual(got, want) {
				t.Errorf("writes = %v, want %v", got, want)
			}
			if ev := e.Events(); len(ev) != 0 {
				t.Errorf("events = %v, want none", ev)
			}
		})
	}

	t.Run("S-U2_field_mapping", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stFull())
		e.storeSet(set)
		e.mustCreatePod(stPod(set, 0, stRevision1))

		w := e.GetWorkload(WorkloadName(set))
		if w.Namespace != stNS || w.Name != WorkloadName(set) {
			t.Errorf("Workload %s/%s, want %s/%s", w.Namespace, w.Name, stNS, WorkloadName(set))
		}
		if want := (&schedulingv1beta1.TypedLocalObjectReference{APIGroup: "apps", Kind: "StatefulSet", Name: "db"}); !equality.Semantic.DeepEqual(w.Spec.ControllerRef, want) {
			t.Errorf("spec.controllerRef = %+v, want %+v", w.Spec.ControllerRef, want)
		}
		if len(w.Spec.PodGroupTemplates) != 1 || len(w.Spec.CompositePodGroupTemplates) != 0 {
			t.Fatalf("templates = %+v / %+v, want exactly one PodGroupTemplate", w.Spec.PodGroupTemplates, w.Spec.CompositePodGroupTemplates)
		}
		tmpl := w.Spec.PodGroupTemplates[0]
		if tmpl.Name != TemplateName(set) || tmpl.Name != "db" {
			t.Errorf("template name = %q, want the StatefulSet's name", tmpl.Name)
		}
		if g := tmpl.SchedulingPolicy.Gang; g == nil || g.MinCount != 3 || tmpl.SchedulingPolicy.Basic != nil {
			t.Errorf("template policy = %+v, want gang minCount 3 (spec.replicas)", tmpl.SchedulingPolicy)
		}
		if want := (&schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: stZone}}}); !equality.Semantic.DeepEqual(tmpl.SchedulingConstraints, want) {
			t.Errorf("template constraints = %+v, want zone topology", tmpl.SchedulingConstraints)
		}
		if dm := tmpl.DisruptionMode; dm == nil || dm.All == nil || dm.Single != nil {
			t.Errorf("template disruptionMode = %+v, want all", dm)
		}
		wantClaims := []schedulingv1beta1.PodGroupResourceClaim{
			{Name: "shared-device", ResourceClaimTemplateName: ptr.To("shared-device-template")},
			{Name: "pinned", ResourceClaimName: ptr.To("pinned-claim")},
		}
		if !equality.Semantic.DeepEqual(tmpl.ResourceClaims, wantClaims) {
			t.Errorf("template resourceClaims = %+v, want %+v", tmpl.ResourceClaims, wantClaims)
		}

		pg := e.GetPodGroup(PodGroupName(w.Name, tmpl.Name))
		if want := (&schedulingv1beta1.WorkloadReference{WorkloadName: w.Name, TemplateName: tmpl.Name}); !equality.Semantic.DeepEqual(pg.Spec.WorkloadRef, want) {
			t.Errorf("podGroup workloadRef = %+v, want %+v", pg.Spec.WorkloadRef, want)
		}
		if !equality.Semantic.DeepEqual(pg.Spec.SchedulingPolicy, tmpl.SchedulingPolicy) ||
			!equality.Semantic.DeepEqual(pg.Spec.SchedulingConstraints, tmpl.SchedulingConstraints) ||
			!equality.Semantic.DeepEqual(pg.Spec.DisruptionMode, tmpl.DisruptionMode) ||
			!equality.Semantic.DeepEqual(pg.Spec.ResourceClaims, tmpl.ResourceClaims) ||
			pg.Spec.PriorityClassName != tmpl.PriorityClassName {
			t.Errorf("PodGroup spec %+v is not a snapshot of the template %+v", pg.Spec, tmpl)
		}
		if pg.Spec.ParentCompositePodGroupName != nil {
			t.Errorf("parentCompositePodGroupName = %q, want unset", *pg.Spec.ParentCompositePodGroupName)
		}
	})

	t.Run("S-U2_names_of_a_63_character_statefulset_are_valid", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		name := strings.Repeat("a", 30) + "-" + strings.Repeat("b", 32) // a DNS label of 63
		set := stSet(t, name, 2, stGang())
		e.storeSet(set)
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		w, pg := e.OnlyWorkload(), e.OnlyPodGroup()
		if errs := validation.IsDNS1123Subdomain(w.Name); len(errs) != 0 {
			t.Errorf("Workload name %q: %v", w.Name, errs)
		}
		if errs := validation.IsDNS1123Label(w.Spec.PodGroupTemplates[0].Name); len(errs) != 0 {
			t.Errorf("template name %q: %v", w.Spec.PodGroupTemplates[0].Name, errs)
		}
		if errs := validation.IsDNS1123Subdomain(pg.Name); len(errs) != 0 {
			t.Errorf("PodGroup name %q: %v", pg.Name, errs)
		}
		stCheckGrouped(t, pod, set, pg)
	})

	t.Run("S-U1_malformed_intent_behaves_as_upstream_with_a_warning", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 2, nil)
		set.Annotations = map[string]string{intent.StatefulSetAnnotation: `{"schedulingPolicy":{"gang":{}},"bogus":1}`}
		e.storeSet(set)
		e.Client.ClearActions()
		stCheckUngrouped(t, e.mustCreatePod(stPod(set, 0, stRevision1)), set)
		if got := e.SchedulingCalls(); len(got) != 0 {
			t.Errorf("scheduling calls = %v, want none", got)
		}
		if ev := e.Events(); !fakeapi.HasEvent(ev, "Warning "+events.InvalidSchedulingIntent) {
			t.Errorf("events = %v, want Warning %s", ev, events.InvalidSchedulingIntent)
		}
	})

	t.Run("S-U2_empty_scheduling_is_basic_without_anything_else", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, &intent.StatefulSetSchedulingConfiguration{})
		set.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
		if set.Annotations[intent.StatefulSetAnnotation] != "{}" {
			t.Fatalf("annotation = %q, want {}", set.Annotations[intent.StatefulSetAnnotation])
		}
		e.storeSet(set)
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		w, pg := e.OnlyWorkload(), e.OnlyPodGroup()
		tmpl := w.Spec.PodGroupTemplates[0]
		for what, spec := range map[string]struct {
			policy      schedulingv1beta1.PodGroupSchedulingPolicy
			constraints *schedulingv1beta1.PodGroupSchedulingConstraints
			disruption  *schedulingv1beta1.DisruptionMode
			claims      []schedulingv1beta1.PodGroupResourceClaim
		}{
			"template": {tmpl.SchedulingPolicy, tmpl.SchedulingConstraints, tmpl.DisruptionMode, tmpl.ResourceClaims},
			"podgroup": {pg.Spec.SchedulingPolicy, pg.Spec.SchedulingConstraints, pg.Spec.DisruptionMode, pg.Spec.ResourceClaims},
		} {
			if spec.policy.Basic == nil || spec.policy.Gang != nil {
				t.Errorf("%s policy = %+v, want basic", what, spec.policy)
			}
			if spec.constraints != nil || spec.disruption != nil || len(spec.claims) != 0 {
				t.Errorf("%s has constraints %+v, disruptionMode %+v, claims %+v; want none", what, spec.constraints, spec.disruption, spec.claims)
			}
		}
		stCheckGrouped(t, pod, set, pg)
	})

	for _, tc := range []struct {
		name   string
		policy *schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy
		mode   *schedulingv1alpha3.WorkloadPodGroupDisruptionMode
	}{
		{"S-U3_basic_single_topology", stBasic().SchedulingPolicy, &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{Single: &schedulingv1alpha3.WorkloadPodGroupSingleDisruptionMode{}}},
		{"S-U3_gang_single_topology", stGang().SchedulingPolicy, &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{Single: &schedulingv1alpha3.WorkloadPodGroupSingleDisruptionMode{}}},
		{"S-U3_gang_all_topology", stGang().SchedulingPolicy, &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{All: &schedulingv1alpha3.WorkloadPodGroupAllDisruptionMode{}}},
		{"S-U3_basic_topology_no_disruption_mode", stBasic().SchedulingPolicy, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := stNewEnv(t, stEnvOptions{})
			cfg := &intent.StatefulSetSchedulingConfiguration{
				SchedulingPolicy:      tc.policy,
				SchedulingConstraints: &schedulingv1alpha3.WorkloadPodGroupSchedulingConstraints{Topology: []schedulingv1alpha3.TopologyConstraint{{Key: stRack}}},
				DisruptionMode:        tc.mode,
			}
			set := stSet(t, "trainer", 4, cfg)
			e.storeSet(set)
			e.mustCreatePod(stPod(set, 0, stRevision1))
			w, pg := e.OnlyWorkload(), e.OnlyPodGroup()
			tmpl := w.Spec.PodGroupTemplates[0]
			wantTopology := &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: stRack}}}
			var wantMode *schedulingv1beta1.DisruptionMode
			switch {
			case tc.mode == nil:
			case tc.mode.All != nil:
				wantMode = &schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}}
			default:
				wantMode = &schedulingv1beta1.DisruptionMode{Single: &schedulingv1beta1.SingleDisruptionMode{}}
			}
			for what, got := range map[string][2]any{
				"template": {tmpl.SchedulingConstraints, tmpl.DisruptionMode},
				"podgroup": {pg.Spec.SchedulingConstraints, pg.Spec.DisruptionMode},
			} {
				if !equality.Semantic.DeepEqual(got[0], wantTopology) {
					t.Errorf("%s schedulingConstraints = %+v, want %+v", what, got[0], wantTopology)
				}
				if !equality.Semantic.DeepEqual(got[1], wantMode) {
					t.Errorf("%s disruptionMode = %+v, want %+v", what, got[1], wantMode)
				}
			}
			gang := tc.policy.Gang != nil
			if (pg.Spec.SchedulingPolicy.Gang != nil) != gang || (pg.Spec.SchedulingPolicy.Basic != nil) == gang {
				t.Errorf("PodGroup policy = %+v, want gang=%v", pg.Spec.SchedulingPolicy, gang)
			}
			if gang && stGangMin(pg) != 4 {
				t.Errorf("PodGroup minCount = %d, want 4", stGangMin(pg))
			}
		})
	}

	t.Run("S-U4_pods_join_the_created_podgroup", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		e.storeSet(set)
		for i := range 3 {
			in := stPod(set, i, stRevision1)
			before := in.DeepCopy()
			created := e.mustCreatePod(in)
			pg := e.OnlyPodGroup()
			stCheckGrouped(t, created, set, pg)
			stCheckGrouped(t, e.GetPod(in.Name), set, pg)
			if !equality.Semantic.DeepEqual(in, before) {
				t.Errorf("the caller's pod %s was modified", in.Name)
			}
			// Apart from schedulingGroup and the PodGroup ownerReference the
			// pod is what the controller asked for.
			cp := created.DeepCopy()
			cp.Spec.SchedulingGroup = nil
			cp.OwnerReferences = cp.OwnerReferences[:1]
			if !equality.Semantic.DeepEqual(cp.Spec, before.Spec) || !equality.Semantic.DeepEqual(cp.OwnerReferences, before.OwnerReferences) || !reflect.DeepEqual(cp.Labels, before.Labels) {
				t.Errorf("pod %s changed beyond schedulingGroup and the PodGroup ownerReference", in.Name)
			}
		}
	})

	t.Run("S-U4_pod_already_in_a_group_passes_through", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		e.storeSet(set)
		e.Client.ClearActions()
		pod := stPod(set, 0, stRevision1)
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("chosen-elsewhere")}
		created := e.mustCreatePod(pod)
		if ptr.Deref(created.Spec.SchedulingGroup.PodGroupName, "") != "chosen-elsewhere" || len(created.OwnerReferences) != 1 {
			t.Errorf("pod = %+v, want it untouched", created)
		}
		if got := e.SchedulingCalls(); len(got) != 0 {
			t.Errorf("scheduling calls = %v, want none", got)
		}
	})

	t.Run("S-U10_owner_references_and_finalizer", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		e.storeSet(set)
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		w, pg := e.OnlyWorkload(), e.OnlyPodGroup()

		if w.Annotations[ManagedByAnnotation] != ManagedByValue || pg.Annotations[ManagedByAnnotation] != ManagedByValue {
			t.Errorf("managed-by annotations: Workload %v, PodGroup %v; want %s=%s", w.Annotations, pg.Annotations, ManagedByAnnotation, ManagedByValue)
		}
		if len(w.OwnerReferences) != 1 {
			t.Fatalf("Workload ownerReferences = %+v, want the StatefulSet only", w.OwnerReferences)
		}
		stCheckSetRef(t, "Workload", w.OwnerReferences[0], set)
		if len(w.Finalizers) != 0 {
			t.Errorf("Workload finalizers = %v, want none", w.Finalizers)
		}
		if len(pg.OwnerReferences) != 2 {
			t.Fatalf("PodGroup ownerReferences = %+v, want the StatefulSet and the Workload", pg.OwnerReferences)
		}
		stCheckSetRef(t, "PodGroup", pg.OwnerReferences[0], set)
		wref := pg.OwnerReferences[1]
		if wref.APIVersion != "scheduling.k8s.io/v1beta1" || wref.Kind != "Workload" || wref.Name != w.Name || w.UID == "" || wref.UID != w.UID ||
			!ptr.Deref(wref.BlockOwnerDeletion, false) || ptr.Deref(wref.Controller, false) {
			t.Errorf("PodGroup -> Workload ownerReference = %+v, want non-controller blockOwnerDeletion Workload %s uid %s", wref, w.Name, w.UID)
		}
		if ref := metav1.GetControllerOf(pg); ref == nil || ref.UID != set.UID {
			t.Errorf("PodGroup controller = %+v, want the StatefulSet", ref)
		}
		if !reflect.DeepEqual(pg.Finalizers, []string{PodGroupProtectionFinalizer}) || PodGroupProtectionFinalizer != "scheduling.k8s.io/podgroup-protection" {
			t.Errorf("PodGroup finalizers = %v, want [scheduling.k8s.io/podgroup-protection]", pg.Finalizers)
		}
		stCheckGrouped(t, pod, set, pg)
		if ManagedByAnnotation != "scheduling.k8s.io/managed-by" || ManagedByValue != "statefulset-controller" {
			t.Errorf("managed-by = %s=%s, want the KEP's scheduling.k8s.io/managed-by=statefulset-controller", ManagedByAnnotation, ManagedByValue)
		}
	})

	t.Run("S-U10_objects_of_a_previous_incarnation_are_not_adopted", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		old := stSet(t, "db", 3, stGang())
		old.UID = "sts-uid-db-previous"
		oldW := stManagedWorkload(t, old, stGang())
		e.Seed(oldW)
		oldPG, err := BuildPodGroup(old, oldW, "db", true, true)
		if err != nil {
			t.Fatal(err)
		}
		e.Seed(oldPG)
		set := stSet(t, "db", 5, stGang())
		e.storeSet(set)
		e.Client.ClearActions()
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		if got, want := e.SchedulingWrites(), []string{"create workloads", "create podgroups"}; !reflect.DeepEqual(got, want) {
			t.Errorf("scheduling writes = %v, want %v (new objects, the old ones untouched)", got, want)
		}
		w := e.GetWorkload(WorkloadName(set))
		if w.Name == oldW.Name || !metav1.IsControlledBy(w, set) {
			t.Errorf("Workload %s controlled by %+v, want a new one controlled by UID %s", w.Name, metav1.GetControllerOf(w), set.UID)
		}
		pg := e.GetPodGroup(PodGroupName(w.Name, "db"))
		stCheckGrouped(t, pod, set, pg)
		if stGangMin(e.GetPodGroup(oldPG.Name)) != 3 || stTemplateMin(e.GetWorkload(oldW.Name)) != 3 {
			t.Errorf("the previous incarnation's objects were changed")
		}
	})

	t.Run("S-P9_events_of_a_successful_creation", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		e.storeSet(set)
		e.mustCreatePod(stPod(set, 0, stRevision1))
		ev := e.Events()
		if !fakeapi.HasEvent(ev, "Normal "+events.WorkloadCreated) || !fakeapi.HasEvent(ev, "Normal "+events.PodGroupCreated) {
			t.Errorf("events = %v, want Normal %s and Normal %s", ev, events.WorkloadCreated, events.PodGroupCreated)
		}
	})

	t.Run("S-P9_failed_workload_create_counts_and_emits_event", func(t *testing.T) {
		RegisterMetrics()
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		e.storeSet(set)
		before := stCounter(t, "statefulset_workload_creation_errors_total")
		e.Fail("create", "workloads", apierrors.NewForbidden(schedulingv1beta1.Resource("workloads"), "", errors.New("quota")))
		if _, err := e.createPod(stPod(set, 0, stRevision1)); err == nil {
			t.Fatal("pod created although its Workload could not be")
		}
		after := stCounter(t, "statefulset_workload_creation_errors_total")
		if after-before != 1 {
			t.Errorf("statefulset_workload_creation_errors_total went from %v to %v, want +1", before, after)
		}
		if ev := e.Events(); !fakeapi.HasEvent(ev, "Warning "+events.WorkloadCreationFailed) {
			t.Errorf("events = %v, want Warning %s", ev, events.WorkloadCreationFailed)
		}
		if got, want := e.Writes(), []string{"create workloads"}; !reflect.DeepEqual(got, want) {
			t.Errorf("writes = %v, want only the failed %v", got, want)
		}
		// Once the API accepts it, the retry goes through, and the counter stays.
		e.Heal("create", "workloads")
		stCheckGrouped(t, e.mustCreatePod(stPod(set, 0, stRevision1)), set, e.OnlyPodGroup())
		if again := stCounter(t, "statefulset_workload_creation_errors_total"); again != after {
			t.Errorf("counter moved on success: %v -> %v", after, again)
		}
	})

	// Found on kind: a controller manager restarted while the API was not
	// served has never synced its scheduling informers; a gang StatefulSet's
	// pods wait, and the wait must show as failed creations, not as silence.
	t.Run("S-P9_started_while_not_served_counts_and_emits_event", func(t *testing.T) {
		RegisterMetrics()
		e := stNewEnv(t, stEnvOptions{notServed: true})
		set := stSet(t, "db", 3, stGang())
		e.storeSet(set)
		before := stCounter(t, "statefulset_workload_creation_errors_total")
		if _, err := e.createPod(stPod(set, 0, stRevision1)); err == nil {
			t.Fatal("gang pod created although the scheduling API is not served")
		}
		if after := stCounter(t, "statefulset_workload_creation_errors_total"); after-before != 1 {
			t.Errorf("statefulset_workload_creation_errors_total went from %v to %v, want +1", before, after)
		}
		if ev := e.Events(); !fakeapi.HasEvent(ev, "Warning "+events.WorkloadCreationFailed) {
			t.Errorf("events = %v, want Warning %s", ev, events.WorkloadCreationFailed)
		}
		if w := e.Writes(); len(w) != 0 {
			t.Errorf("writes = %v, want none while the API is not served", w)
		}
	})
}

// stCounter reads a counter from the legacy registry /metrics serves
// (component-base's testutil needs modules go.mod does not list).
func stCounter(t *testing.T, name string) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == name {
			if len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetCounter() == nil {
				t.Fatalf("metric %s = %v, want one counter", name, mf)
			}
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}

func stCheckSetRef(t *testing.T, what string, ref metav1.OwnerReference, set *appsv1.StatefulSet) {
	t.Helper()
	if ref.APIVersion != "apps/v1" || ref.Kind != "StatefulSet" || ref.Name != set.Name || ref.UID != set.UID ||
		!ptr.Deref(ref.Controller, false) || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("%s -> StatefulSet ownerReference = %+v, want controller+blockOwnerDeletion apps/v1 StatefulSet %s uid %s", what, ref, set.Name, set.UID)
	}
}

// stScaledSetup is a gang StatefulSet of n replicas whose pods were created
// through the hook, with the informers caught up.
func stScaledSetup(t *testing.T, e *stEnv, n int32) (*appsv1.StatefulSet, *schedulingv1beta1.Workload, *schedulingv1beta1.PodGroup) {
	t.Helper()
	set := stSet(t, "db", n, stFull())
	e.storeSet(set)
	e.createAll(set, int(n), stRevision1)
	e.SyncCaches()
	w, pg := e.OnlyWorkload(), e.OnlyPodGroup()
	if stTemplateMin(w) != n || stGangMin(pg) != n {
		t.Fatalf("set-up: minCounts %d/%d, want %d", stTemplateMin(w), stGangMin(pg), n)
	}
	e.Client.ClearActions()
	e.Events()
	return set, w, pg
}

func stScale(e *stEnv, set *appsv1.StatefulSet, n int32) *appsv1.StatefulSet {
	set = set.DeepCopy()
	set.Spec.Replicas = ptr.To(n)
	e.storeSet(set)
	return set
}

// TestKEP6277Scaling covers S-U5 to S-U9.
func TestKEP6277Scaling(t *testing.T) {
	podGroupUpdateFails := apierrors.NewServiceUnavailable("etcd leader election")

	t.Run("S-U5_scale_up_updates_workload_then_podgroup_in_place_before_the_pod", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set, w, pg := stScaledSetup(t, e, 3)
		set = stScale(e, set, 5)

		pod := e.mustCreatePod(stPod(set, 3, stRevision1))
		if got, want := e.Writes(), []string{"update workloads", "update podgroups", "create pods"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("writes = %v, want %v", got, want)
		}
		e.mustCreatePod(stPod(set, 4, stRevision1))
		if got := e.SchedulingWrites(); len(got) != 2 {
			t.Errorf("scheduling writes = %v, want no more after the first pod", got)
		}
		gotW, gotPG := e.GetWorkload(w.Name), e.GetPodGroup(pg.Name)
		if stTemplateMin(gotW) != 5 || stGangMin(gotPG) != 5 {
			t.Errorf("minCounts = %d/%d, want 5/5", stTemplateMin(gotW), stGangMin(gotPG))
		}
		if gotW.UID != w.UID || gotPG.UID != pg.UID {
			t.Errorf("objects replaced, want updated in place")
		}
		// Only minCount changed.
		gotW.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount = 3
		gotPG.Spec.SchedulingPolicy.Gang.MinCount = 3
		if !equality.Semantic.DeepEqual(gotW.Spec, w.Spec) || !equality.Semantic.DeepEqual(gotPG.Spec, pg.Spec) ||
			!equality.Semantic.DeepEqual(gotPG.OwnerReferences, pg.OwnerReferences) || !reflect.DeepEqual(gotPG.Finalizers, pg.Finalizers) {
			t.Errorf("scaling changed more than minCount")
		}
		stCheckGrouped(t, pod, set, e.GetPodGroup(pg.Name))
		if len(e.StoredWorkloads()) != 1 || len(e.StoredPodGroups()) != 1 {
			t.Errorf("objects created on scale")
		}
	})

	t.Run("S-U5_basic_policy_has_no_minCount_to_sync", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 2, stBasic())
		e.storeSet(set)
		e.createAll(set, 2, stRevision1)
		e.SyncCaches()
		e.Client.ClearActions()
		set = stScale(e, set, 4)
		stCheckGrouped(t, e.mustCreatePod(stPod(set, 2, stRevision1)), set, e.OnlyPodGroup())
		stScale(e, set, 0)
		for _, name := range []string{"db-2", "db-1", "db-0"} {
			if err := e.deletePod(name); err != nil {
				t.Fatal(err)
			}
		}
		if got := e.SchedulingWrites(); len(got) != 0 {
			t.Errorf("scheduling writes = %v, want none for a basic group", got)
		}
	})

	t.Run("S-U5_failed_podgroup_update_blocks_the_pod_and_the_next_call_converges", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set, w, pg := stScaledSetup(t, e, 3)
		set = stScale(e, set, 5)
		e.Fail("update", "podgroups", podGroupUpdateFails)

		if _, err := e.createPod(stPod(set, 3, stRevision1)); err == nil {
			t.Fatal("pod created although the PodGroup update failed")
		}
		if got, want := e.Writes(), []string{"update workloads", "update podgroups"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("writes = %v, want %v (and no pod)", got, want)
		}
		if stTemplateMin(e.GetWorkload(w.Name)) != 5 || stGangMin(e.GetPodGroup(pg.Name)) != 3 {
			t.Fatalf("between the two updates: minCounts %d/%d, want 5/3", stTemplateMin(e.GetWorkload(w.Name)), stGangMin(e.GetPodGroup(pg.Name)))
		}
		// Still failing: still no pod.
		if _, err := e.createPod(stPod(set, 3, stRevision1)); err == nil {
			t.Fatal("pod created on the second try although the PodGroup update still fails")
		}
		e.Heal("update", "podgroups")
		e.Client.ClearActions()
		pod := e.mustCreatePod(stPod(set, 3, stRevision1))
		if got, want := e.Writes(), []string{"update podgroups", "create pods"}; !reflect.DeepEqual(got, want) {
			t.Errorf("writes on retry = %v, want %v", got, want)
		}
		if stTemplateMin(e.GetWorkload(w.Name)) != 5 || stGangMin(e.GetPodGroup(pg.Name)) != 5 {
			t.Errorf("after retry minCounts %d/%d, want 5/5", stTemplateMin(e.GetWorkload(w.Name)), stGangMin(e.GetPodGroup(pg.Name)))
		}
		stCheckGrouped(t, pod, set, pg)
		if e.Count("create", "workloads")+e.Count("create", "podgroups") != 0 {
			t.Errorf("objects recreated on retry")
		}
	})

	t.Run("S-U5_failed_workload_update_touches_neither_podgroup_nor_pod", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set, w, pg := stScaledSetup(t, e, 3)
		set = stScale(e, set, 4)
		e.Fail("update", "workloads", podGroupUpdateFails)
		if _, err := e.createPod(stPod(set, 3, stRevision1)); err == nil {
			t.Fatal("pod created although the Workload update failed")
		}
		if got, want := e.Writes(), []string{"update workloads"}; !reflect.DeepEqual(got, want) {
			t.Errorf("writes = %v, want %v", got, want)
		}
		e.Heal("update", "workloads")
		e.mustCreatePod(stPod(set, 3, stRevision1))
		if stTemplateMin(e.GetWorkload(w.Name)) != 4 || stGangMin(e.GetPodGroup(pg.Name)) != 4 {
			t.Errorf("minCounts %d/%d, want 4/4", stTemplateMin(e.GetWorkload(w.Name)), stGangMin(e.GetPodGroup(pg.Name)))
		}
	})

	t.Run("S-U5_S-U6_back_to_back_scaling_before_the_informers_catch_up", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set, w, pg := stScaledSetup(t, e, 3)
		// Every step right after the previous write: the updates must carry
		// the resourceVersion of the controller's own last write.
		set = stScale(e, set, 4)
		e.mustCreatePod(stPod(set, 3, stRevision1))
		set = stScale(e, set, 2)
		for _, name := range []string{"db-3", "db-2"} {
			if err := e.deletePod(name); err != nil {
				t.Fatalf("deleting %s: %v", name, err)
			}
		}
		set = stScale(e, set, 5)
		for i := 2; i < 5; i++ {
			e.mustCreatePod(stPod(set, i, stRevision1))
		}
		want := []string{
			"update workloads", "update podgroups", "create pods",
			"update workloads", "update podgroups", "delete pods", "delete pods",
			"update workloads", "update podgroups", "create pods", "create pods", "create pods",
		}
		if got := e.Writes(); !reflect.DeepEqual(got, want) {
			t.Errorf("writes = %v, want %v", got, want)
		}
		if stTemplateMin(e.GetWorkload(w.Name)) != 5 || stGangMin(e.GetPodGroup(pg.Name)) != 5 {
			t.Errorf("minCounts %d/%d, want 5/5", stTemplateMin(e.GetWorkload(w.Name)), stGangMin(e.GetPodGroup(pg.Name)))
		}
	})

	t.Run("S-U6_scale_down_lowers_both_minCounts_before_deleting", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set, w, pg := stScaledSetup(t, e, 5)
		stScale(e, set, 3)

		if err := e.deletePod("db-4"); err != nil {
			t.Fatal(err)
		}
		if got, want := e.Writes(), []string{"update workloads", "update podgroups", "delete pods"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("writes = %v, want %v", got, want)
		}
		if err := e.deletePod("db-3"); err != nil {
			t.Fatal(err)
		}
		if got, want := e.Writes(), []string{"update workloads", "update podgroups", "delete pods", "delete pods"}; !reflect.DeepEqual(got, want) {
			t.Errorf("writes = %v, want %v", got, want)
		}
		if stTemplateMin(e.GetWorkload(w.Name)) != 3 || stGangMin(e.GetPodGroup(pg.Name)) != 3 {
			t.Errorf("minCounts %d/%d, want 3/3", stTemplateMin(e.GetWorkload(w.Name)), stGangMin(e.GetPodGroup(pg.Name)))
		}
	})

	t.Run("S-U6_failed_podgroup_update_blocks_deletion_until_retry_succeeds", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set, w, pg := stScaledSetup(t, e, 5)
		stScale(e, set, 3)
		e.Fail("update", "podgroups", podGroupUpdateFails)

		err := e.deletePod("db-4")
		if err == nil || !apierrors.IsServiceUnavailable(err) {
			t.Fatalf("Delete = %v, want the PodGroup update's error", err)
		}
		if n := e.Count("delete", "pods"); n != 0 {
			t.Fatalf("%d pod deletes, want none while the PodGroup keeps minCount 5", n)
		}
		if got, want := e.Writes(), []string{"update workloads", "update podgroups"}; !reflect.DeepEqual(got, want) {
			t.Errorf("writes = %v, want %v", got, want)
		}
		e.GetPod("db-4") // still there
		if stGangMin(e.GetPodGroup(pg.Name)) != 5 {
			t.Errorf("PodGroup minCount %d, want 5 until the retry", stGangMin(e.GetPodGroup(pg.Name)))
		}

		e.Heal("update", "podgroups")
		e.Client.ClearActions()
		if err := e.deletePod("db-4"); err != nil {
			t.Fatalf("Delete after the failure is lifted: %v", err)
		}
		if got, want := e.Writes(), []string{"update podgroups", "delete pods"}; !reflect.DeepEqual(got, want) {
			t.Errorf("writes = %v, want %v", got, want)
		}
		if stTemplateMin(e.GetWorkload(w.Name)) != 3 || stGangMin(e.GetPodGroup(pg.Name)) != 3 {
			t.Errorf("minCounts %d/%d, want 3/3", stTemplateMin(e.GetWorkload(w.Name)), stGangMin(e.GetPodGroup(pg.Name)))
		}
		if _, err := e.Client.CoreV1().Pods(stNS).Get(e.Ctx, "db-4", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("db-4 still there: %v", err)
		}
	})

	t.Run("S-U7_scale_to_zero_clamps_to_one_and_keeps_both_objects", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set, w, pg := stScaledSetup(t, e, 3)
		set = stScale(e, set, 0)
		for _, name := range []string{"db-2", "db-1", "db-0"} {
			if err := e.deletePod(name); err != nil {
				t.Fatalf("deleting %s: %v", name, err)
			}
		}
		if got, want := e.Writes(), []string{"update workloads", "update podgroups", "delete pods", "delete pods", "delete pods"}; !reflect.DeepEqual(got, want) {
			t.Errorf("writes = %v, want %v", got, want)
		}
		for _, obj := range e.UpdatedObjects("workloads") {
			if m := stTemplateMin(obj.(*schedulingv1beta1.Workload)); m < 1 {
				t.Errorf("Workload updated to minCount %d", m)
			}
		}
		for _, obj := range e.UpdatedObjects("podgroups") {
			if m := stGangMin(obj.(*schedulingv1beta1.PodGroup)); m < 1 {
				t.Errorf("PodGroup updated to minCount %d", m)
			}
		}
		gotW, gotPG := e.GetWorkload(w.Name), e.GetPodGroup(pg.Name)
		if stTemplateMin(gotW) != 1 || stGangMin(gotPG) != 1 || gotW.UID != w.UID || gotPG.UID != pg.UID {
			t.Errorf("at zero: minCounts %d/%d (uids %s/%s), want 1/1 on the same objects", stTemplateMin(gotW), stGangMin(gotPG), gotW.UID, gotPG.UID)
		}
		// Back up: the same objects are discovered (no pods, but nothing to
		// create) and raised before the first pod.
		set = stScale(e, set, 2)
		e.Client.ClearActions()
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		if got, want := e.Writes(), []string{"update workloads", "update podgroups", "create pods"}; !reflect.DeepEqual(got, want) {
			t.Errorf("writes on scale-up from zero = %v, want %v", got, want)
		}
		stCheckGrouped(t, pod, set, pg)
		if stGangMin(e.GetPodGroup(pg.Name)) != 2 {
			t.Errorf("PodGroup minCount %d, want 2", stGangMin(e.GetPodGroup(pg.Name)))
		}
	})

	t.Run("S-U7_zero_replicas_from_the_start", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 0, stGang())
		e.storeSet(set)
		// The upstream controller creates no pod at zero, but a Delete-only
		// or a later scale-up must find objects with minCount 1.
		pg, err := e.r.Resolve(e.Ctx, set)
		if err != nil || pg == nil {
			t.Fatalf("Resolve = %v, %v", pg, err)
		}
		if stTemplateMin(e.OnlyWorkload()) != 1 || stGangMin(e.OnlyPodGroup()) != 1 {
			t.Errorf("minCounts %d/%d, want 1/1", stTemplateMin(e.OnlyWorkload()), stGangMin(e.OnlyPodGroup()))
		}
	})

	t.Run("S-U8_derived_minCount_never_written_back", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set, _, _ := stScaledSetup(t, e, 3)
		annotation := set.Annotations[intent.StatefulSetAnnotation]
		setBefore := set.DeepCopy()
		set = stScale(e, set, 4)
		e.mustCreatePod(stPod(set, 3, stRevision1))
		stScale(e, set, 2)
		for _, name := range []string{"db-3", "db-2"} {
			if err := e.deletePod(name); err != nil {
				t.Fatal(err)
			}
		}
		for _, a := range e.Client.Actions() {
			if a.GetResource().Resource == "statefulsets" && a.GetVerb() != "list" && a.GetVerb() != "watch" && a.GetVerb() != "get" {
				t.Errorf("action %s on statefulsets, want none", a.GetVerb())
			}
		}
		obj, _, _ := e.sets.GetByKey(stNS + "/db")
		cached := obj.(*appsv1.StatefulSet)
		if cached.Annotations[intent.StatefulSetAnnotation] != annotation {
			t.Errorf("intent annotation changed: %q -> %q", annotation, cached.Annotations[intent.StatefulSetAnnotation])
		}
		cfg, err := intent.FromAnnotation(cached.Annotations, intent.StatefulSetAnnotation)
		if err != nil || cfg.ExplicitMinCount() != nil {
			t.Errorf("spec.scheduling gang.minCount = %v (%v), want still nil", cfg.ExplicitMinCount(), err)
		}
		if !equality.Semantic.DeepEqual(setBefore.Annotations, set.Annotations) || !equality.Semantic.DeepEqual(setBefore.Spec.Template, set.Spec.Template) {
			t.Errorf("the StatefulSet object was modified in memory")
		}
	})

	t.Run("S-U9_podgroup_stable_across_a_rolling_update", func(t *testing.T) {
		for _, n := range []int32{3, 1} {
			e := stNewEnv(t, stEnvOptions{})
			set, w, pg := stScaledSetup(t, e, n)
			// The upstream controller replaces pods from the highest ordinal
			// down, one at a time, with the new revision.
			for i := int(n) - 1; i >= 0; i-- {
				name := stPod(set, i, "").Name
				if err := e.deletePod(name); err != nil {
					t.Fatal(err)
				}
				pod := e.mustCreatePod(stPod(set, i, stRevision2))
				stCheckGrouped(t, pod, set, pg)
				if pod.Labels[appsv1.ControllerRevisionHashLabelKey] != stRevision2 {
					t.Errorf("pod %s revision %q", pod.Name, pod.Labels[appsv1.ControllerRevisionHashLabelKey])
				}
			}
			if got := e.SchedulingWrites(); len(got) != 0 {
				t.Errorf("replicas %d: scheduling writes during the rolling update = %v, want none", n, got)
			}
			gotW, gotPG := e.OnlyWorkload(), e.OnlyPodGroup()
			if gotPG.Name != pg.Name || gotPG.UID != pg.UID || gotW.UID != w.UID || gotPG.ResourceVersion != pg.ResourceVersion {
				t.Errorf("replicas %d: PodGroup %s/%s after the update, want %s/%s untouched", n, gotPG.Name, gotPG.UID, pg.Name, pg.UID)
			}
		}
	})
}

// TestKEP6277ResourceClaims covers S-U24.
func TestKEP6277ResourceClaims(t *testing.T) {
	podClaims := []corev1.PodResourceClaim{
		{Name: "shared-device", ResourceClaimTemplateName: ptr.To("shared-device-template")},
		{Name: "pinned", ResourceClaimName: ptr.To("pinned-claim")},
	}

	t.Run("S-U24_claims_pass_through_and_pods_keep_the_templates_claims", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 2, stFull())
		set.Spec.Template.Spec.ResourceClaims = podClaims
		set.Spec.Template.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "shared-device"}}
		e.storeSet(set)
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		w, pg := e.OnlyWorkload(), e.OnlyPodGroup()
		want := []schedulingv1beta1.PodGroupResourceClaim{
			{Name: "shared-device", ResourceClaimTemplateName: ptr.To("shared-device-template")},
			{Name: "pinned", ResourceClaimName: ptr.To("pinned-claim")},
		}
		if !equality.Semantic.DeepEqual(w.Spec.PodGroupTemplates[0].ResourceClaims, want) || !equality.Semantic.DeepEqual(pg.Spec.ResourceClaims, want) {
			t.Errorf("claims: template %+v, PodGroup %+v; want %+v", w.Spec.PodGroupTemplates[0].ResourceClaims, pg.Spec.ResourceClaims, want)
		}
		if !equality.Semantic.DeepEqual(pod.Spec.ResourceClaims, podClaims) || !equality.Semantic.DeepEqual(pod.Spec.Containers[0].Resources.Claims, set.Spec.Template.Spec.Containers[0].Resources.Claims) {
			t.Errorf("pod resourceClaims = %+v, want the template's %+v", pod.Spec.ResourceClaims, podClaims)
		}
		stCheckGrouped(t, pod, set, pg)
	})

	t.Run("S-U24_hook_never_injects_claims", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 2, stFull())
		e.storeSet(set)
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		if len(e.OnlyPodGroup().Spec.ResourceClaims) != 2 {
			t.Fatalf("PodGroup claims = %+v, want 2", e.OnlyPodGroup().Spec.ResourceClaims)
		}
		if len(pod.Spec.ResourceClaims) != 0 || len(pod.Spec.Containers[0].Resources.Claims) != 0 {
			t.Errorf("pod got resourceClaims %+v / %+v, want none (the template has none)", pod.Spec.ResourceClaims, pod.Spec.Containers[0].Resources.Claims)
		}
		// A template with only one of them keeps exactly that one.
		set = set.DeepCopy()
		set.Spec.Template.Spec.ResourceClaims = podClaims[1:]
		e.storeSet(set)
		pod = e.mustCreatePod(stPod(set, 1, stRevision1))
		if !equality.Semantic.DeepEqual(pod.Spec.ResourceClaims, podClaims[1:]) {
			t.Errorf("pod resourceClaims = %+v, want %+v", pod.Spec.ResourceClaims, podClaims[1:])
		}
	})

	t.Run("S-U24_no_claims_in_intent_none_anywhere", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		cfg := stGang()
		cfg.ResourceClaims = []schedulingv1alpha3.WorkloadPodGroupResourceClaim{}
		set := stSet(t, "db", 2, cfg)
		e.storeSet(set)
		e.mustCreatePod(stPod(set, 0, stRevision1))
		if w, pg := e.OnlyWorkload(), e.OnlyPodGroup(); w.Spec.PodGroupTemplates[0].ResourceClaims != nil || pg.Spec.ResourceClaims != nil {
			t.Errorf("claims: template %+v, PodGroup %+v; want omitted", w.Spec.PodGroupTemplates[0].ResourceClaims, pg.Spec.ResourceClaims)
		}
	})

	t.Run("S-U24_gate_off_podgroup_has_no_claims", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{claimsOff: true})
		set := stSet(t, "db", 2, stFull())
		set.Spec.Template.Spec.ResourceClaims = podClaims
		e.storeSet(set)
		pod := e.mustCreatePod(stPod(set, 0, stRevision1))
		pg := e.OnlyPodGroup()
		if len(pg.Spec.ResourceClaims) != 0 {
			t.Errorf("PodGroup resourceClaims = %+v, want none with DRAWorkloadResourceClaims off", pg.Spec.ResourceClaims)
		}
		if stGangMin(pg) != 2 || pg.Spec.DisruptionMode == nil || pg.Spec.SchedulingConstraints == nil {
			t.Errorf("the rest of the PodGroup was lost: %+v", pg.Spec)
		}
		// The pod is the template's: its own claims stay (per-pod claims).
		if !equality.Semantic.DeepEqual(pod.Spec.ResourceClaims, podClaims) {
			t.Errorf("pod resourceClaims = %+v, want the template's", pod.Spec.ResourceClaims)
		}
	})

	// KEP-6277 Design Details: "When spec.scheduling.resourceClaims is
	// non-empty (and the DRAWorkloadResourceClaims feature gate is enabled),
	// the controller populates PodGroupTemplate.resourceClaims"; Unit tests:
	// "ResourceClaims field is omitted from PodGroupTemplate when
	// DRAWorkloadResourceClaims gate is disabled".
	t.Run("S-U24_gate_off_workload_template_has_no_claims", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{claimsOff: true})
		set := stSet(t, "db", 2, stFull())
		e.storeSet(set)
		e.mustCreatePod(stPod(set, 0, stRevision1))
		if claims := e.OnlyWorkload().Spec.PodGroupTemplates[0].ResourceClaims; len(claims) != 0 {
			t.Errorf("PodGroupTemplate resourceClaims = %+v, want omitted with DRAWorkloadResourceClaims off (KEP-6277 test plan)", claims)
		}
	})
}
