package admission

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder"
	appsvalidation "k8s.io/kubernetes/pkg/apis/apps/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/workload-aware/apps-harness/api/intent"
	"github.com/workload-aware/apps-harness/controllers/deployment"
)

// Knobs of a fuzzed Deployment: one bit each, except the strategy (two bits).
// Zero is the defaulted Deployment newDeployment builds, with the gate on.
const (
	dGateOff uint16 = 1 << iota
	dReplicasNil
	dOldReplicasNil
	dStrategyLow // strategy: Recreate, RollingUpdate, "", "Bogus"
	dStrategyHigh
	dSchedulingGroup
	dAbsent    // the new object has no intent annotation
	dOldAbsent // the old object has none
	dPriorityClass
	dBare // a zero Deployment, as a webhook never sees one
	dNoUID
)

var fuzzStrategies = []appsv1.DeploymentStrategyType{appsv1.RecreateDeploymentStrategyType, appsv1.RollingUpdateDeploymentStrategyType, "", "Bogus"}

// fuzzDeployment is one fuzz input: the new and old objects of an update
// (the new one alone for a create), and the target replicas of a /scale.
type fuzzDeployment struct {
	value, oldValue, name string
	replicas, oldReplicas int32
	knobs                 uint16
}

func (in fuzzDeployment) has(k uint16) bool { return in.knobs&k != 0 }

func (in fuzzDeployment) object(value string, absent bool, replicas int32, replicasNil bool) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	if !in.has(dBare) {
		d = newDeployment()
		d.Spec.Strategy.Type = fuzzStrategies[(in.knobs/dStrategyLow)%4]
	}
	d.Name = in.name
	if in.has(dNoUID) {
		d.UID = ""
	} else {
		d.UID = types.UID("0b7a6c3e-1111-4c1d-9d0e-5f5e5f5e5f5e")
	}
	d.Spec.Replicas = ptr.To(replicas)
	if replicasNil {
		d.Spec.Replicas = nil
	}
	if in.has(dSchedulingGroup) {
		schedulingGroup(d)
	}
	if in.has(dPriorityClass) {
		d.Spec.Template.Spec.PriorityClassName = "high-priority"
	}
	if !absent {
		annotation(value)(d)
	}
	return d
}

func (in fuzzDeployment) objects() (d, old *appsv1.Deployment) {
	return in.object(in.value, in.has(dAbsent), in.replicas, in.has(dReplicasNil)),
		in.object(in.oldValue, in.has(dOldAbsent), in.oldReplicas, in.has(dOldReplicasNil))
}

// FuzzValidateDeployment feeds fuzzed intents and Deployment shapes to
// ValidateCreate, ValidateUpdate and ValidateScale and checks that they never
// panic, that every rejection says where (spec.scheduling..., the annotation,
// or spec.replicas below an explicit minCount) and why, that what they accept
// keeps KEP-6276's rules, and that every accepted intent compiles to a
// Workload and PodGroup that workloadbuilder and the kube-apiserver accept.
func FuzzValidateDeployment(f *testing.F) {
	add := func(in fuzzDeployment) {
		f.Add(in.value, in.oldValue, in.name, in.replicas, in.oldReplicas, in.knobs)
	}
	const name = "inference-server"

	// The old odd-input subtests, one seed each: every odd value on every
	// shape, updated from itself. On the first shape also updated from
	// example1, and (gate off) example2 from it. (Fewer seeds than the old
	// subtests' calls: under -fuzz every seed costs a coverage baseline run.)
	shapes := []fuzzDeployment{
		{name: name, replicas: 3},
		{name: name, knobs: dReplicasNil},
		{name: name, replicas: -1},
		{name: name, replicas: 3, knobs: 2 * dStrategyLow}, // strategy ""
		{name: name, replicas: 3, knobs: dSchedulingGroup},
		{name: "", replicas: 3, knobs: dNoUID},
		{name: strings.Repeat("a.", 200), replicas: 3},
	}
	for _, v := range oddIntents {
		for i, s := range shapes {
			s.value = v
			s.oldValue, s.oldReplicas = v, s.replicas
			add(s)
			if i == 0 {
				s.oldValue = example1
				add(s)
				s.value, s.oldValue, s.knobs = example2, v, s.knobs|dGateOff
				add(s)
			}
		}
	}
	// The old empty-objects subtest: zero Deployments, with and without intent.
	bare := dBare | dNoUID | dReplicasNil | dOldReplicasNil
	add(fuzzDeployment{knobs: bare | dAbsent | dOldAbsent})
	add(fuzzDeployment{value: example1, knobs: bare | dOldAbsent})

	// Names at the length limits, where the derived names are truncated.
	for _, n := range []string{strings.Repeat("a.", 126) + "a", strings.Repeat("x", 253), strings.Repeat("ab", 121) + ".c", strings.Repeat("d", 63)} {
		add(fuzzDeployment{value: example1, oldValue: example1, name: n, replicas: 3, oldReplicas: 3})
		add(fuzzDeployment{value: example3, oldValue: example3, name: n, replicas: 4, oldReplicas: 3, knobs: dPriorityClass})
	}

	// Every intent value of the unit tests, in turn updated from itself or
	// (gate off, scaled below example2's minCount) from example2.
	for i, v := range testIntentLiterals(f) {
		if i%2 == 0 {
			add(fuzzDeployment{value: v, oldValue: v, name: name, replicas: 3, oldReplicas: 3})
		} else {
			add(fuzzDeployment{value: v, oldValue: example2, name: name, replicas: 2, oldReplicas: 4, knobs: dGateOff})
		}
	}

	// Every Deployment in fixtures/, as written, scaled, and without the gate.
	for _, obj := range fixtureObjects(f, "Deployment") {
		var d appsv1.Deployment
		if err := yaml.Unmarshal(obj.raw, &d); err != nil {
			f.Fatal(err)
		}
		in := fuzzDeployment{name: d.Name, replicas: ptr.Deref(d.Spec.Replicas, 1)}
		in.value, in.oldValue, in.oldReplicas = d.Annotations[intent.DeploymentAnnotation], in.value, in.replicas
		for i, s := range fuzzStrategies {
			if s == d.Spec.Strategy.Type || (s == appsv1.RollingUpdateDeploymentStrategyType && d.Spec.Strategy.Type == "") {
				in.knobs |= uint16(i) * dStrategyLow
			}
		}
		if d.Spec.Template.Spec.PriorityClassName != "" {
			in.knobs |= dPriorityClass
		}
		add(in)
		in.replicas = 1
		add(in)
		in.knobs |= dGateOff
		add(in)
	}

	f.Fuzz(func(t *testing.T, value, oldValue, name string, replicas, oldReplicas int32, knobs uint16) {
		in := fuzzDeployment{value, oldValue, name, replicas, oldReplicas, knobs}
		checkDeploymentInput(t, in)
	})
}

func checkDeploymentInput(t *testing.T, in fuzzDeployment) {
	gate := !in.has(dGateOff)
	d, old := in.objects()
	cfg, parseErr := intent.FromAnnotations(d.Annotations)
	oldCfg, _ := intent.FromAnnotations(old.Annotations)
	replicas := ptr.Deref(d.Spec.Replicas, 1)

	// spec.replicas may carry an error only where it is below an explicit
	// minCount (a floor for positive replica counts).
	belowMin := func(r int32) rejectionCheck {
		m := cfg.ExplicitMinCount()
		return rejectionCheck{annotationPath: annotationPath.String(), extra: map[string]bool{
			replicasPath.String(): parseErr == nil && m != nil && belowFloor(r, *m),
		}}
	}
	createOnly := rejectionCheck{annotationPath: annotationPath.String()}

	// Create.
	created := ValidateCreate(d, gate)
	checkRejections(t, "create", created, createOnly)
	if parseErr != nil && len(created) == 0 {
		t.Fatalf("create accepted a malformed annotation: %v", parseErr)
	}
	if len(created) == 0 && cfg != nil {
		if !gate {
			t.Fatalf("create accepted spec.scheduling with the gate off")
		}
		checkDeploymentRules(t, d, cfg)
		checkDeploymentCompiles(t, d, cfg)
	}

	// Update from old. What was admissible at creation and is accepted as
	// an update must compile too (an old value that was never admissible
	// ratchets, as unchanged data does in the apiserver).
	updated := ValidateUpdate(d, old, gate)
	checkRejections(t, "update", updated, belowMin(replicas))
	if len(updated) == 0 && cfg != nil {
		if oldCfg == nil {
			t.Fatalf("update added spec.scheduling")
		}
		if cfg.IsGang() != oldCfg.IsGang() ||
			!equality.Semantic.DeepEqual(cfg.SchedulingConstraints, oldCfg.SchedulingConstraints) ||
			!equality.Semantic.DeepEqual(cfg.DisruptionMode, oldCfg.DisruptionMode) ||
			!equality.Semantic.DeepEqual(cfg.ResourceClaims, oldCfg.ResourceClaims) {
			t.Fatalf("update changed more than gang.minCount:\n new %+v\n old %+v", cfg, oldCfg)
		}
		if len(ValidateCreate(old, true)) == 0 {
			checkDeploymentCompiles(t, d, cfg)
		}
	}
	if len(updated) == 0 && cfg == nil && oldCfg != nil {
		t.Fatalf("update removed spec.scheduling")
	}

	// /scale of the new object to oldReplicas.
	scaled := ValidateScale(d, in.oldReplicas)
	checkRejections(t, "scale", scaled, belowMin(in.oldReplicas))
	if len(scaled) == 0 && len(created) == 0 && cfg != nil && in.oldReplicas >= 0 {
		s := d.DeepCopy()
		s.Spec.Replicas = ptr.To(in.oldReplicas)
		checkDeploymentCompiles(t, s, cfg)
	}
}

// checkDeploymentRules asserts KEP-6276's hand-written rules hold for an
// accepted intent.
func checkDeploymentRules(t *testing.T, d *appsv1.Deployment, cfg *intent.DeploymentSchedulingConfiguration) {
	t.Helper()
	if d.Spec.Template.Spec.SchedulingGroup != nil {
		t.Fatalf("accepted spec.scheduling with a pod template that sets schedulingGroup")
	}
	if cfg.IsGang() && strategyType(d) != appsv1.RecreateDeploymentStrategyType {
		t.Fatalf("accepted gang with strategy %q", strategyType(d))
	}
	if m := cfg.ExplicitMinCount(); m != nil {
		if r := ptr.Deref(d.Spec.Replicas, 1); r > 0 && *m > r { // 0 keeps minCount (D-I4); negative never passes the apiserver
			t.Fatalf("accepted gang.minCount %d above replicas %d", *m, r)
		}
	}
}

// podTemplateHash stands for the ReplicaSet's pod-template-hash label.
const podTemplateHash = "5d8f7c9b6"

// checkDeploymentCompiles asserts that the controller compiles an accepted
// intent into a Workload and a ReplicaSet's PodGroup that workloadbuilder
// Validate (building-block DV, allow-lists) and the kube-apiserver accept,
// and that they carry the intent. A Deployment the apiserver would not have
// admitted (bad name, no namespace, no UID) never reaches the controller: skipped.
func checkDeploymentCompiles(t *testing.T, d *appsv1.Deployment, cfg *intent.DeploymentSchedulingConfiguration) {
	t.Helper()
	if d.Namespace == "" || d.UID == "" || len(appsvalidation.ValidateDeploymentName(d.Name, false)) > 0 {
		return
	}
	item := deployment.WorkloadItem(d, cfg, deployment.SchedulingPath)
	if errs := workloadbuilder.NewBuilder(item, deployment.BuildOptions()).Validate(context.Background(), workloadbuilder.ValidationInput{}); len(errs) > 0 {
		t.Fatalf("accepted intent fails workloadbuilder Validate: %v", errs.ToAggregate())
	}
	w, err := deployment.BuildWorkload(d, cfg)
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
	checkCompiledTemplate(t, &tmpl, cfg, deployment.ResolvedMinCount(cfg, ptr.Deref(d.Spec.Replicas, 1)))
	w.UID = "9c2d0000-4444-4b4b-8c8c-000000000001" // as created

	// The PodGroup of the ReplicaSet, named as the Deployment controller names
	// the ReplicaSet; a name no ReplicaSet can have has no PodGroup either.
	rsName := deployment.PodGroupName(d.Name, podTemplateHash)
	if len(appsvalidation.ValidateReplicaSetName(rsName, false)) > 0 {
		return
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: rsName, Namespace: d.Namespace, UID: "7e1f0000-3333-4a4a-9b9b-000000000001"}}
	pg, err := deployment.BuildPodGroup(w, rs, rsName, true)
	if err != nil {
		t.Fatalf("compiled Workload gives no PodGroup: %v", err)
	}
	if errs := apiserverRejectsPodGroup(t, pg); len(errs) > 0 {
		t.Fatalf("the apiserver rejects the compiled PodGroup: %v\n%s", errs.ToAggregate(), dump(t, pg))
	}
	checkPodGroupFromTemplate(t, pg, w, &tmpl)
}

// checkCompiledTemplate asserts the template carries the intent.
func checkCompiledTemplate(t *testing.T, tmpl *schedulingv1beta1.PodGroupTemplate, cfg *intent.SchedulingConfiguration, minCount int32) {
	t.Helper()
	gang := tmpl.SchedulingPolicy.Gang
	switch {
	case cfg.IsGang() && (gang == nil || gang.MinCount != minCount):
		t.Fatalf("gang intent compiled to %+v, want gang minCount %d", tmpl.SchedulingPolicy, minCount)
	case !cfg.IsGang() && (gang != nil || tmpl.SchedulingPolicy.Basic == nil):
		t.Fatalf("basic intent compiled to %+v", tmpl.SchedulingPolicy)
	}
	if all := cfg.DisruptionMode != nil && cfg.DisruptionMode.All != nil; all != (tmpl.DisruptionMode != nil && tmpl.DisruptionMode.All != nil) {
		t.Fatalf("disruptionMode %+v compiled to %+v", cfg.DisruptionMode, tmpl.DisruptionMode)
	}
	if len(tmpl.ResourceClaims) != len(cfg.ResourceClaims) {
		t.Fatalf("%d resourceClaims compiled to %d", len(cfg.ResourceClaims), len(tmpl.ResourceClaims))
	}
	var topology int
	if cfg.SchedulingConstraints != nil {
		topology = len(cfg.SchedulingConstraints.Topology)
	}
	if tmpl.SchedulingConstraints == nil && topology > 0 || tmpl.SchedulingConstraints != nil && len(tmpl.SchedulingConstraints.Topology) != topology {
		t.Fatalf("schedulingConstraints %+v compiled to %+v", cfg.SchedulingConstraints, tmpl.SchedulingConstraints)
	}
}

// checkPodGroupFromTemplate asserts the PodGroup is the template's, for w.
func checkPodGroupFromTemplate(t *testing.T, pg *schedulingv1beta1.PodGroup, w *schedulingv1beta1.Workload, tmpl *schedulingv1beta1.PodGroupTemplate) {
	t.Helper()
	if ref := pg.Spec.WorkloadRef; ref == nil || ref.WorkloadName != w.Name || ref.TemplateName != tmpl.Name {
		t.Fatalf("PodGroup workloadRef %+v, want %s/%s", pg.Spec.WorkloadRef, w.Name, tmpl.Name)
	}
	if !equality.Semantic.DeepEqual(pg.Spec.SchedulingPolicy, tmpl.SchedulingPolicy) ||
		!equality.Semantic.DeepEqual(pg.Spec.DisruptionMode, tmpl.DisruptionMode) {
		t.Fatalf("PodGroup %+v does not carry its template %+v", pg.Spec, tmpl)
	}
}

func dump(t *testing.T, obj any) string {
	t.Helper()
	out, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
