package parity

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// record is a small run: a gang Deployment d1 with two revisions, a basic
// StatefulSet s1, a Deployment d2 without intent, and an adopted
// ReplicaSet's pods.
func record() *Observations {
	return &Observations{
		Namespaces: map[string]*Namespace{"ns": {Spec: "[sig-apps] Deployment x"}},
		Owners: map[types.UID]*Owner{
			"d1": {Kind: "Deployment", Namespace: "ns", Name: "d1", Intent: "gang", Strategy: "Recreate"},
			"s1": {Kind: "StatefulSet", Namespace: "ns", Name: "s1", Intent: "basic", Strategy: "OrderedReady"},
			"d2": {Kind: "Deployment", Namespace: "ns", Name: "d2"},
		},
		ReplicaSets: map[types.UID]*ReplicaSet{
			"rs1": {Namespace: "ns", Name: "d1-1", Deployment: "d1"},
			"rs2": {Namespace: "ns", Name: "d1-2", Deployment: "d1"},
		},
		Workloads: map[types.UID]*Object{
			"w1": {Namespace: "ns", Name: "d1", Owner: "d1"},
			"w2": {Namespace: "ns", Name: "s1", Owner: "s1"},
		},
		PodGroups: map[types.UID]*Object{
			"g1": {Namespace: "ns", Name: "d1-1", Owner: "rs1", Gang: true},
			"g2": {Namespace: "ns", Name: "d1-2", Owner: "rs2", Gang: true},
			"g3": {Namespace: "ns", Name: "s1", Owner: "s1"},
		},
		Pods: map[types.UID]*PodCount{
			"rs1": {Created: 3, InGroup: 3, FirstName: "d1-1-a"},
			"rs2": {Created: 3, InGroup: 3, FirstName: "d1-2-a"},
			"s1":  {Created: 2, InGroup: 2, FirstName: "s1-0"},
		},
	}
}

func findings(o *Observations) map[string]Finding {
	out := map[string]Finding{}
	for _, f := range Judge(o) {
		out[f.Name] = f
	}
	return out
}

func TestJudgeAllThere(t *testing.T) {
	got := findings(record())
	if len(got) != 2 {
		t.Fatalf("findings %v: want d1 and s1 only (d2 has no intent)", got)
	}
	for _, name := range []string{"d1", "s1"} {
		if f := got[name]; !f.Judged || !f.OK {
			t.Errorf("%s: %+v, want judged and OK", name, f)
		}
	}
	if f := got["d1"]; f.Pods != 6 || f.PodGroups != 2 || f.Spec != "Deployment x" {
		t.Errorf("d1: %+v", f)
	}
}

// Each way an implementation can fall short of the KEPs is caught.
func TestJudgeMissing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(o *Observations)
		owner  string
		why    string
	}{
		{"no Workload", func(o *Observations) { delete(o.Workloads, "w1") }, "d1", "no Workload owned by the Deployment"},
		{"a revision without PodGroup", func(o *Observations) { delete(o.PodGroups, "g2") }, "d1", "no PodGroup owned by the controller of pod d1-2-a"},
		{"a pod outside its PodGroup", func(o *Observations) { o.Pods["s1"].InGroup = 1 }, "s1", "1 of 2 pods named no PodGroup"},
		{"gang intent, basic PodGroup", func(o *Observations) { o.PodGroups["g1"].Gang = false }, "d1", "1 of its PodGroups are not gang"},
		{"PodGroup owned by the Deployment, not the ReplicaSet", func(o *Observations) { o.PodGroups["g1"].Owner = "d1" }, "d1", "no PodGroup owned by the controller of pod d1-1-a"},
	} {
		o := record()
		tc.break_(o)
		f := findings(o)[tc.owner]
		if !f.Judged || f.OK || !strings.Contains(f.Why, tc.why) {
			t.Errorf("%s: %+v, want judged, not OK, %q", tc.name, f, tc.why)
		}
	}
}

// What the record cannot speak for is not judged, and says why.
func TestJudgeNotJudged(t *testing.T) {
	o := record()
	o.Owners["d1"].IntentChanged = true
	delete(o.Pods, "s1")
	got := findings(o)
	if f := got["d1"]; f.Judged || f.Why != "its intent changed during the spec" {
		t.Errorf("d1: %+v", f)
	}
	if f := got["s1"]; f.Judged || f.Why != "it created no pod" {
		t.Errorf("s1: %+v", f)
	}
	// Outside the e2e namespaces: not in the record at all.
	o = record()
	delete(o.Namespaces, "ns")
	if got := Judge(o); len(got) != 0 {
		t.Errorf("findings outside e2e namespaces: %v", got)
	}
}

func TestCompare(t *testing.T) {
	baseline := &Run{Mode: "baseline", Specs: map[string]Spec{
		"a": {State: "passed"}, "b": {State: "failed", Failure: "error running kubectl exec"},
	}}
	gang := &Run{Mode: "gang", Specs: map[string]Spec{
		"a": {State: "failed", Failure: "timed out"}, "b": {State: "failed"},
	}, Findings: []Finding{{Kind: "Deployment", Namespace: "ns", Name: "d", Judged: true, Why: "no Workload"}}}
	v := Compare(baseline, []*Run{gang}, nil)
	if len(v.Regressions) != 1 || !strings.HasPrefix(v.Regressions[0], "gang: a:") {
		t.Errorf("regressions %v: want only spec a (b fails on the baseline too)", v.Regressions)
	}
	if len(v.Missing) != 1 || v.OK() {
		t.Errorf("missing %v, OK %v", v.Missing, v.OK())
	}
	// No baseline (vendor mode): every failure counts.
	if v := Compare(nil, []*Run{gang}, nil); len(v.Regressions) != 2 {
		t.Errorf("without a baseline: %v", v.Regressions)
	}
	if r := reason("b", "RunHostCmd still failed after 5m: error running kubectl exec"); !strings.HasPrefix(r, "exec") {
		t.Errorf("reason %q", r)
	}
	if r := reason("StatefulSet Deploy clustered applications should creating a working CockroachDB cluster [Slow]", "Failed waiting for pods to enter running: context deadline exceeded"); !strings.HasPrefix(r, "image") {
		t.Errorf("reason %q", r)
	}
	if r := reason("StatefulSet something new", "timed out"); !strings.HasPrefix(r, "unexplained") {
		t.Errorf("an unknown failure: want unexplained, got %q", r)
	}
}

func TestStrategyRules(t *testing.T) {
	rules, err := LoadStrategyRules("../../hack/parity/strategy-dependent.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) == 0 {
		t.Fatal("no rules")
	}
	if _, ok := DependsOnStrategy(rules, "[sig-apps] Deployment RollingUpdateDeployment should delete old pods and create new ones [Conformance]"); !ok {
		t.Error("the RollingUpdate spec must keep its strategy")
	}
	if _, ok := DependsOnStrategy(rules, "[sig-apps] Deployment Deployment should have a working scale subresource [Conformance]"); ok {
		t.Error("the scale subresource spec does not depend on its strategy")
	}
}

// A spec that fails with intent as a KEP requires is listed apart only when
// its failure names the rule's field and error type.
func TestCompareKEPRequires(t *testing.T) {
	rules, err := LoadKEPRules("../../hack/parity/kep-requires.txt")
	if err != nil {
		t.Fatal(err)
	}
	spec := "StatefulSet Basic StatefulSet functionality [StatefulSetBasic] should perform canary updates and phased rolling updates of template modifications [Conformance]"
	baseline := &Run{Mode: "baseline", Specs: map[string]Spec{spec: {State: "passed"}}}
	asRequired := &Run{Mode: "basic", Specs: map[string]Spec{spec: {State: "failed",
		Failure: `StatefulSet.apps "ss2" is invalid: spec.updateStrategy.rollingUpdate.partition: Forbidden: partitioned rollouts are not supported`}}}
	otherwise := &Run{Mode: "gang", Specs: map[string]Spec{spec: {State: "failed", Failure: "timed out waiting for the condition"}}}
	plain := &Run{Mode: "plain", Specs: asRequired.Specs}
	v := Compare(baseline, []*Run{asRequired, otherwise, plain}, rules)
	if len(v.AsKEPRequires) != 1 || !strings.HasPrefix(v.AsKEPRequires[0], "basic:") {
		t.Errorf("as the KEP requires: %v, want the basic run only", v.AsKEPRequires)
	}
	// The gang run failed another way; the plain run has no intent, so no
	// KEP rule speaks for it.
	if len(v.Regressions) != 2 {
		t.Errorf("regressions %v, want gang and plain", v.Regressions)
	}
}
