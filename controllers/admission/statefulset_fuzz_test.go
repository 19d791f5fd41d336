package admission

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder"
	appsvalidation "k8s.io/kubernetes/pkg/apis/apps/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/workload-aware/apps-harness/api/intent"
	"github.com/workload-aware/apps-harness/controllers/statefulset"
)

// Knobs of a fuzzed StatefulSet: one bit each, except the pod management
// policy (two bits). Zero is the defaulted StatefulSet newStatefulSet builds
// (partition from the input), with the gate on.
const (
	sGateOff uint16 = 1 << iota
	sReplicasNil
	sOldReplicasNil
	sPolicyLow // podManagementPolicy: Parallel, OrderedReady, "", "Sideways"
	sPolicyHigh
	sRollingUpdateNil // updateStrategy.rollingUpdate unset
	sPartitionNil     // rollingUpdate.partition unset
	sMirrorClaims     // the pod template has an entry matching every intent claim
	sOddPodClaims     // the pod template has an empty entry and one named "a"
	sAbsent           // the new object has no intent annotation
	sOldAbsent        // the old object has none
	sPriorityClass
	sBare // a zero StatefulSet, as a webhook never sees one
	sNoUID
)

var fuzzPolicies = []appsv1.PodManagementPolicyType{appsv1.ParallelPodManagement, appsv1.OrderedReadyPodManagement, "", "Sideways"}

// fuzzStatefulSet is one fuzz input: the new and old objects of an update
// (the new one alone for a create).
type fuzzStatefulSet struct {
	value, oldValue, name string
	replicas, oldReplicas int32
	partition             int32
	knobs                 uint16
}

func (in fuzzStatefulSet) has(k uint16) bool { return in.knobs&k != 0 }

func (in fuzzStatefulSet) object(value string, absent bool, replicas int32, replicasNil bool) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{}
	if !in.has(sBare) {
		s = newStatefulSet()
		s.Spec.PodManagementPolicy = fuzzPolicies[(in.knobs/sPolicyLow)%4]
		s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(in.partition)
		if in.has(sPartitionNil) {
			s.Spec.UpdateStrategy.RollingUpdate.Partition = nil
		}
		if in.has(sRollingUpdateNil) {
			s.Spec.UpdateStrategy.RollingUpdate = nil
		}
	}
	s.Name = in.name
	if in.has(sNoUID) {
		s.UID = ""
	} else {
		s.UID = types.UID("5d1c7a2e-2222-4b6a-8f3e-6a6a6a6a6a6a")
	}
	s.Spec.Replicas = ptr.To(replicas)
	if replicasNil {
		s.Spec.Replicas = nil
	}
	if in.has(sPriorityClass) {
		s.Spec.Template.Spec.PriorityClassName = "high-priority"
	}
	if in.has(sOddPodClaims) {
		s.Spec.Template.Spec.ResourceClaims = append(s.Spec.Template.Spec.ResourceClaims, corev1.PodResourceClaim{}, corev1.PodResourceClaim{Name: "a"})
	}
	if !absent {
		stsIntent(value)(s)
		if cfg, err := intent.FromAnnotation(s.Annotations, intent.StatefulSetAnnotation); in.has(sMirrorClaims) && err == nil && cfg != nil {
			for _, c := range cfg.ResourceClaims {
				s.Spec.Template.Spec.ResourceClaims = append(s.Spec.Template.Spec.ResourceClaims, corev1.PodResourceClaim{
					Name: c.Name, ResourceClaimName: c.ResourceClaimName, ResourceClaimTemplateName: c.ResourceClaimTemplateName})
			}
		}
	}
	return s
}

func (in fuzzStatefulSet) objects() (set, old *appsv1.StatefulSet) {
	return in.object(in.value, in.has(sAbsent), in.replicas, in.has(sReplicasNil)),
		in.object(in.oldValue, in.has(sOldAbsent), in.oldReplicas, in.has(sOldReplicasNil))
}

// FuzzValidateStatefulSet feeds fuzzed intents and StatefulSet shapes to
// ValidateStatefulSetCreate and ValidateStatefulSetUpdate and checks that they
// never panic, that every rejection says where (spec.scheduling..., the
// annotation, or a positive partition) and why, that warnings come only with
// an accepted object and only for unmatched claims, that what they accept
// keeps KEP-6277's rules, and that every accepted intent compiles to a
// Workload and PodGroup that workloadbuilder and the kube-apiserver accept.
func FuzzValidateStatefulSet(f *testing.F) {
	add := func(in fuzzStatefulSet) {
		f.Add(in.value, in.oldValue, in.name, in.replicas, in.oldReplicas, in.partition, in.knobs)
	}
	const name = "kv-store"

	// The old odd-input subtests, one seed each: every odd value on every
	// shape, updated from itself. On the first shape also with the gate off,
	// updated from stsGang, and (gate off) stsGang from it. (Fewer seeds than
	// the old subtests' calls: under -fuzz every seed costs a coverage
	// baseline run.)
	shapes := []fuzzStatefulSet{
		{name: name, replicas: 3},
		{name: name, knobs: sReplicasNil},
		{name: name, replicas: -1},
		{name: name, replicas: 3, knobs: 2 * sPolicyLow}, // policy ""
		{name: name, replicas: 3, knobs: 3 * sPolicyLow}, // policy "Sideways"
		{name: name, replicas: 3, partition: -1},
		{name: name, replicas: 3, knobs: sPartitionNil},
		{name: name, replicas: 3, knobs: sOddPodClaims},
		{name: "", replicas: 3, knobs: sNoUID},
		{name: strings.Repeat("a.", 200), replicas: 3},
	}
	for _, v := range append(oddIntents, stsGangFull) {
		for i, s := range shapes {
			s.value = v
			s.oldValue, s.oldReplicas = v, s.replicas
			add(s)
			if i == 0 {
				s.knobs |= sGateOff
				add(s)
				s.oldValue, s.knobs = stsGang, s.knobs&^sGateOff
				add(s)
				s.value, s.oldValue, s.knobs = stsGang, v, s.knobs|sGateOff
				add(s)
			}
		}
	}
	// The old empty-objects subtest: zero StatefulSets, with and without intent.
	bare := sBare | sNoUID | sReplicasNil | sOldReplicasNil
	add(fuzzStatefulSet{knobs: bare | sAbsent | sOldAbsent})
	add(fuzzStatefulSet{value: stsGangFull, oldValue: stsGangFull, knobs: bare})

	// Names at the length limit of a StatefulSet (a DNS label).
	for _, n := range []string{strings.Repeat("s", 63), strings.Repeat("a-", 31) + "b", "a"} {
		add(fuzzStatefulSet{value: stsGangFull, oldValue: stsGangFull, name: n, replicas: 3, oldReplicas: 3, knobs: sMirrorClaims})
		add(fuzzStatefulSet{value: stsBasicShared, oldValue: stsBasicShared, name: n, replicas: 2, oldReplicas: 3, knobs: sPriorityClass | 1*sPolicyLow})
	}

	// Every intent value of the unit tests, in turn: updated from itself,
	// scaled with matching pod claims, or (gate off, OrderedReady, partition
	// 1) updated from stsGang.
	for i, v := range testIntentLiterals(f) {
		switch i % 3 {
		case 0:
			add(fuzzStatefulSet{value: v, oldValue: v, name: name, replicas: 3, oldReplicas: 3})
		case 1:
			add(fuzzStatefulSet{value: v, oldValue: v, name: name, replicas: 5, oldReplicas: 2, knobs: sMirrorClaims})
		case 2:
			add(fuzzStatefulSet{value: v, oldValue: stsGang, name: name, replicas: 3, oldReplicas: 3, partition: 1, knobs: sGateOff | 1*sPolicyLow})
		}
	}

	// Every StatefulSet in fixtures/ (the rejected example too), as written,
	// scaled, and without the gate.
	for _, obj := range fixtureObjects(f, "StatefulSet") {
		var s appsv1.StatefulSet
		if err := yaml.Unmarshal(obj.raw, &s); err != nil {
			f.Fatal(err)
		}
		in := fuzzStatefulSet{name: s.Name, replicas: ptr.Deref(s.Spec.Replicas, 1)}
		in.value, in.oldValue, in.oldReplicas = s.Annotations[intent.StatefulSetAnnotation], in.value, in.replicas
		for i, p := range fuzzPolicies {
			if p == s.Spec.PodManagementPolicy || (p == appsv1.OrderedReadyPodManagement && s.Spec.PodManagementPolicy == "") {
				in.knobs |= uint16(i) * sPolicyLow
			}
		}
		if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
			in.partition = ptr.Deref(ru.Partition, 0)
		}
		if len(s.Spec.Template.Spec.ResourceClaims) > 0 {
			in.knobs |= sMirrorClaims
		}
		if s.Spec.Template.Spec.PriorityClassName != "" {
			in.knobs |= sPriorityClass
		}
		add(in)
		in.replicas = 1
		add(in)
		in.knobs |= sGateOff
		add(in)
	}

	f.Fuzz(func(t *testing.T, value, oldValue, name string, replicas, oldReplicas, partition int32, knobs uint16) {
		checkStatefulSetInput(t, fuzzStatefulSet{value, oldValue, name, replicas, oldReplicas, partition, knobs})
	})
}

func checkStatefulSetInput(t *testing.T, in fuzzStatefulSet) {
	gate := !in.has(sGateOff)
	set, old := in.objects()
	cfg, parseErr := intent.FromAnnotation(set.Annotations, intent.StatefulSetAnnotation)
	oldCfg, _ := intent.FromAnnotation(old.Annotations, intent.StatefulSetAnnotation)

	// The partition may carry an error only where it is positive.
	ru := set.Spec.UpdateStrategy.RollingUpdate
	rc := rejectionCheck{annotationPath: stsAnnotationPath.String(), extra: map[string]bool{
		partitionPath.String(): ru != nil && ptr.Deref(ru.Partition, 0) > 0,
	}}

	// Create.
	created, warnings := ValidateStatefulSetCreate(set, gate)
	checkRejections(t, "create", created, rc)
	checkStatefulSetWarnings(t, "create", created, warnings)
	if parseErr != nil && len(created) == 0 {
		t.Fatalf("create accepted a malformed annotation: %v", parseErr)
	}
	if len(created) == 0 && cfg != nil {
		if !gate {
			t.Fatalf("create accepted spec.scheduling with the gate off")
		}
		if in.has(sMirrorClaims) && len(warnings) > 0 {
			t.Fatalf("warnings although the pod template matches every claim: %q", warnings)
		}
		checkStatefulSetRules(t, set, cfg)
		checkStatefulSetCompiles(t, set, cfg)
	}

	// Update from old: spec.scheduling is immutable as a whole. What was
	// admissible at creation and is accepted as an update must compile too.
	updated, warnings := ValidateStatefulSetUpdate(set, old, gate)
	checkRejections(t, "update", updated, rc)
	checkStatefulSetWarnings(t, "update", updated, warnings)
	if len(updated) == 0 && !equality.Semantic.DeepEqual(cfg, oldCfg) {
		t.Fatalf("update changed spec.scheduling:\n new %+v\n old %+v", cfg, oldCfg)
	}
	if len(updated) == 0 && cfg != nil {
		checkStatefulSetRules(t, set, cfg)
		if errs, _ := ValidateStatefulSetCreate(old, true); len(errs) == 0 {
			checkStatefulSetCompiles(t, set, cfg)
		}
	}
}

// checkStatefulSetWarnings asserts warnings come only with an accepted
// object, each about one spec.scheduling.resourceClaims entry.
func checkStatefulSetWarnings(t *testing.T, op string, errs field.ErrorList, warnings []string) {
	t.Helper()
	if len(warnings) == 0 {
		return
	}
	if len(errs) > 0 {
		t.Fatalf("%s: warnings %q with errors %v", op, warnings, errs.ToAggregate())
	}
	for _, w := range warnings {
		if !strings.HasPrefix(w, stsClaimsPath.String()+"[") {
			t.Fatalf("%s: warning %q is not about a spec.scheduling.resourceClaims entry", op, w)
		}
	}
}

// checkStatefulSetRules asserts KEP-6277's hand-written rules hold for an
// accepted intent.
func checkStatefulSetRules(t *testing.T, set *appsv1.StatefulSet, cfg *intent.StatefulSetSchedulingConfiguration) {
	t.Helper()
	if cfg.IsGang() && set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Fatalf("accepted gang with podManagementPolicy %q", set.Spec.PodManagementPolicy)
	}
	if cfg.ExplicitMinCount() != nil {
		t.Fatalf("accepted a user-set gang.minCount %d", *cfg.ExplicitMinCount())
	}
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ptr.Deref(ru.Partition, 0) > 0 {
		t.Fatalf("accepted partition %d with spec.scheduling", *ru.Partition)
	}
}

// checkStatefulSetCompiles asserts that the controller compiles an accepted
// intent into a Workload and PodGroup that workloadbuilder Validate and the
// kube-apiserver accept, and that they carry the intent. A StatefulSet the
// apiserver would not have admitted (bad name, no namespace, no UID) never reaches
// the controller: skipped.
func checkStatefulSetCompiles(t *testing.T, set *appsv1.StatefulSet, cfg *intent.StatefulSetSchedulingConfiguration) {
	t.Helper()
	if set.Namespace == "" || set.UID == "" || len(appsvalidation.ValidateStatefulSetName(set.Name, false)) > 0 {
		return
	}
	item := statefulset.WorkloadItem(set, cfg, statefulset.SchedulingPath)
	if errs := workloadbuilder.NewBuilder(item, statefulset.BuildOptions()).Validate(context.Background(), workloadbuilder.ValidationInput{}); len(errs) > 0 {
		t.Fatalf("accepted intent fails workloadbuilder Validate: %v", errs.ToAggregate())
	}
	w, err := statefulset.BuildWorkload(set, cfg)
	if err != nil {
		t.Fatalf("accepted intent does not compile: %v", err)
	}
	if errs := apiserverRejectsWorkload(t, w); len(errs) > 0 {
		t.Fatalf("the apiserver rejects the compiled Workload: %v\n%s", errs.ToAggregate(), dump(t, w))
	}
	if len(w.Spec.PodGroupTemplates) != 1 {
		t.Fatalf("compiled %d podGroupTemplates, want 1", len(w.Spec.PodGroupTemplates))
	}
	tmpl := w.Spec.PodGroupTemplates[0]
	checkCompiledTemplate(t, &tmpl, cfg, statefulset.ResolvedMinCount(set.Spec.Replicas))

	w.UID = "9c2d0000-4444-4b4b-8c8c-000000000001" // as created
	pg, err := statefulset.BuildPodGroup(set, w, tmpl.Name, true, true)
	if err != nil {
		t.Fatalf("compiled Workload gives no PodGroup: %v", err)
	}
	if errs := apiserverRejectsPodGroup(t, pg); len(errs) > 0 {
		t.Fatalf("the apiserver rejects the compiled PodGroup: %v\n%s", errs.ToAggregate(), dump(t, pg))
	}
	checkPodGroupFromTemplate(t, pg, w, &tmpl)
}
