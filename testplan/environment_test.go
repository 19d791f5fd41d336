package testplan

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// junitVendorRun is trimmed Ginkgo v2.32.0 JUnit of a vendor-mode run with
// --ginkgo.label-filter='(KEP-6276) && !Disruptive': a Disruptive spec the
// filter left out, a spec that does not match the KEP part of the filter,
// a spec skipped by the spec itself, and a selected spec that passed.
const junitVendorRun = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="4" disabled="2" errors="0" failures="0" time="1">
  <testsuite name="WAS conformance" package="/x" tests="4" skipped="3" time="1">
    <properties>
      <property name="SuiteSucceeded" value="true"></property>
      <property name="SuiteLabels" value="[]"></property>
      <property name="LabelFilter" value="(KEP-6276) &amp;&amp; !Disruptive"></property>
    </properties>
    <testcase name="[It] Deployment gate off D-P1 stops creating Workloads [D-P1, KEP-6276, Serial, Disruptive]" classname="WAS conformance" status="skipped" time="0">
      <skipped message="skipped"></skipped>
    </testcase>
    <testcase name="[It] StatefulSet gang creates one PodGroup [S-I1, KEP-6277]" classname="WAS conformance" status="skipped" time="0">
      <skipped message="skipped"></skipped>
    </testcase>
    <testcase name="[It] Deployment crash recovery [D-E6, KEP-6276]" classname="WAS conformance" status="skipped" time="0.1">
      <skipped message="skipped - needs the harness's local cluster"></skipped>
    </testcase>
    <testcase name="[It] Deployment Workload and PodGroups compiles one Workload [D-I1, KEP-6276]" classname="WAS conformance" status="passed" time="0.5">
    </testcase>
  </testsuite>
</testsuites>
`

func TestLabelFilterExplainsSkips(t *testing.T) {
	res, err := ReadJUnit(writeFile(t, "junit.xml", junitVendorRun))
	if err != nil {
		t.Fatal(err)
	}
	m := byName(res)
	filter := `not selected by the label filter "(KEP-6276) && !Disruptive"`
	for name, want := range map[string]string{
		"Deployment gate off D-P1 stops creating Workloads":       filter + " (Disruptive: it restarts or reconfigures cluster components; off against an existing cluster unless ALLOW_DISRUPTIVE=1)",
		"StatefulSet gang creates one PodGroup":                   filter,
		"Deployment crash recovery":                               "needs the harness's local cluster",
		"Deployment Workload and PodGroups compiles one Workload": "",
	} {
		if got := m[name].Reason; got != want {
			t.Errorf("%s: reason %q, want %q", name, got, want)
		}
	}
	rep := Aggregate(loadPlan(t), res, Options{Mode: ModeVendor})
	for id, st := range map[string]Status{"D-P1": StatusSkip, "S-I1": StatusSkip, "D-E6": StatusSkip, "D-I1": StatusPass, "D-I2": StatusMissing} {
		if got, _ := rep.Get(id); got.Status != st {
			t.Errorf("%s: %s, want %s", id, got.Status, st)
		}
	}
}

func TestEnvironmentRoundTripAndReport(t *testing.T) {
	dir := t.TempDir()
	if env, err := ReadEnvironment(filepath.Join(dir, EnvironmentFile)); env != nil || err != nil {
		t.Fatalf("missing file: %+v, %v; want nil, nil", env, err)
	}
	env := &Environment{
		Cluster: "existing", Server: "https://10.0.0.1:6443", ServerVersion: "v1.37.2",
		APIs: []APICheck{
			{GroupVersion: "scheduling.k8s.io/v1beta1", Resources: []string{"workloads", "podgroups"}, Served: true, Required: true},
			{GroupVersion: "resource.k8s.io/v1", Resources: []string{"resourceclaims"}, Served: false},
		},
		APIServerGates:    map[string]bool{"GenericWorkload": true, "CompositePodGroup": false},
		ComponentGates:    map[string]map[string]bool{"kube-scheduler": {"GenericWorkload": true}},
		IntentDeployment:  "annotation",
		IntentStatefulSet: "native",
		Implementation:    "was-controller-manager (field manager of the canary's Workload)",
		Evidence:          []string{"admission: webhook x covers apps/v1 deployments"},
		Problems:          []Problem{{Message: "resource.k8s.io/v1 is not served"}, {Essential: true, Message: "nothing validates"}},
		CheckedAt:         time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC),
	}
	path := filepath.Join(dir, EnvironmentFile)
	if err := WriteEnvironment(path, env); err != nil {
		t.Fatal(err)
	}
	got, err := ReadEnvironment(path)
	if err != nil || !reflect.DeepEqual(got, env) {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, env)
	}
	if e := got.Essentials(); !reflect.DeepEqual(e, []string{"nothing validates"}) {
		t.Errorf("Essentials() = %q", e)
	}

	res, err := ReadJUnit(writeFile(t, "junit.xml", junitVendorRun))
	if err != nil {
		t.Fatal(err)
	}
	rep := Aggregate(loadPlan(t), res, Options{Mode: ModeOf(got)})
	rep.Environment = got
	md := markdown(t, rep)
	summary := fmt.Sprintf("PASS 1, PARTIAL 0, REFERENCE-ONLY 0, SKIP 3, NOT-IMPLEMENTED 0, FAIL 0, MISSING %d of %d", len(rep.Results)-4, len(rep.Results))
	for _, s := range []string{
		"# Conformance report: kep-6276, kep-6277\n\n**" + summary + "**\n\nMode: vendor: only specs run against the cluster under test can make an id PASS",
		"## Environment\n\n- Cluster: existing cluster (vendor mode), https://10.0.0.1:6443\n",
		"- Kubernetes version: v1.37.2\n",
		"scheduling.k8s.io/v1beta1 (workloads, podgroups): served; resource.k8s.io/v1 (resourceclaims): **not served**",
		"- kube-apiserver feature gates (from its /metrics): CompositePodGroup=false, GenericWorkload=true\n",
		"- kube-scheduler feature gates (configured): GenericWorkload=true\n",
		"- Scheduling intent: annotation (Deployments), native (StatefulSets)\n",
		"- Implementation: was-controller-manager (field manager of the canary's Workload)\n  - admission: webhook x covers apps/v1 deployments\n",
		"- note: resource.k8s.io/v1 is not served\n- **missing**: nothing validates\n",
		"- Checked at: 2026-11-30T09:00:00Z\n",
		`| D-P1 | prr | SKIP | Deployment gate off D-P1 stops creating Workloads (SKIP: not selected by the label filter "(KEP-6276) &amp;&amp; !Disruptive" (Disruptive:`,
		"| D-I1 | integration | PASS | Deployment Workload and PodGroups compiles one Workload | none |",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q:\n%s", s, md)
		}
	}
	if strings.Index(md, "## Environment") > strings.Index(md, "## kep-6276") {
		t.Errorf("the environment must come before the ids")
	}
}
