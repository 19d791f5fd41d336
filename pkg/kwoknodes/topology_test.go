package kwoknodes

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kwokv1alpha1 "sigs.k8s.io/kwok/pkg/apis/v1alpha1"
	"sigs.k8s.io/yaml"
)

func TestDefaultTopologyNodes(t *testing.T) {
	topo := DefaultTopology()
	if err := topo.Validate(); err != nil {
		t.Fatal(err)
	}
	nodes := topo.Nodes()
	if len(nodes) != topo.Size() || len(nodes) != 8 {
		t.Fatalf("got %d nodes, want %d (2 zones x 2 racks x 2)", len(nodes), topo.Size())
	}
	names := map[string]bool{}
	perRack := map[string]int{}
	perZone := map[string]int{}
	for _, n := range nodes {
		if names[n.Name] {
			t.Errorf("duplicate node name %s", n.Name)
		}
		names[n.Name] = true
		if n.Labels[HostnameLabel] != n.Name {
			t.Errorf("%s: hostname label %q", n.Name, n.Labels[HostnameLabel])
		}
		zone, rack := n.Labels[ZoneLabel], n.Labels[RackLabel]
		if zone == "" || !strings.HasPrefix(rack, zone+"-") {
			t.Errorf("%s: rack %q is not inside zone %q", n.Name, rack, zone)
		}
		perRack[rack]++
		perZone[zone]++
		if n.Annotations[ManagedAnnotation] != ManagedAnnotationValue {
			t.Errorf("%s: missing kwok annotation, kwok would not manage it", n.Name)
		}
		if len(n.Spec.Taints) != 0 {
			t.Errorf("%s: has taints %v; pods should need no toleration", n.Name, n.Spec.Taints)
		}
		cpu := n.Status.Allocatable[corev1.ResourceCPU]
		if cpu.String() != "4" {
			t.Errorf("%s: allocatable cpu %s, want 4", n.Name, cpu.String())
		}
	}
	if len(perZone) != 2 || len(perRack) != 4 {
		t.Errorf("zones %v racks %v, want 2 zones and 4 racks", perZone, perRack)
	}
	for rack, n := range perRack {
		if n != 2 {
			t.Errorf("rack %s has %d nodes, want 2", rack, n)
		}
	}
}

func TestTopologyValidateNamesTheField(t *testing.T) {
	cases := map[string]struct {
		mutate func(*Topology)
		want   string
	}{
		"no zones":       {func(t *Topology) { t.Zones = 0 }, "zones=0"},
		"bad cpu":        {func(t *Topology) { t.Capacity.CPU = "four" }, "capacity.cpu"},
		"bad memory":     {func(t *Topology) { t.Capacity.Memory = "" }, "capacity.memory"},
		"too many zones": {func(t *Topology) { t.Zones = 27 }, "zones=27"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			topo := DefaultTopology()
			tc.mutate(&topo)
			err := topo.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

func TestSchedulable(t *testing.T) {
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue}
	cases := []struct {
		name string
		node corev1.Node
		want bool
	}{
		{"ready", corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}}}, true},
		{"no condition", corev1.Node{}, false},
		{"not-ready taint", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}}}, false},
		{"prefer-no-schedule taint is fine", corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}}}, true},
		{"cordoned", corev1.Node{Spec: corev1.NodeSpec{Unschedulable: true}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}}}, false},
	}
	for _, tc := range cases {
		if got := Schedulable(&tc.node); got != tc.want {
			t.Errorf("%s: Schedulable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestStagesDecodeWithKwokTypes decodes the embedded configuration strictly
// with kwok's own Stage type, so a field kwok does not know fails here rather
// than being ignored by kwok at run time.
func TestStagesDecodeWithKwokTypes(t *testing.T) {
	dec := utilyaml.NewYAMLReader(bufioReader(Stages()))
	byName := map[string]kwokv1alpha1.Stage{}
	for {
		doc, err := dec.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var s kwokv1alpha1.Stage
		if err := yaml.UnmarshalStrict(doc, &s); err != nil {
			t.Fatalf("stage does not decode strictly as kwok's Stage: %v\n%s", err, doc)
		}
		if s.Kind != "Stage" || s.APIVersion != "kwok.x-k8s.io/v1alpha1" {
			t.Errorf("%s: kind/apiVersion %s %s", s.Name, s.Kind, s.APIVersion)
		}
		byName[s.Name] = s
	}
	want := map[string]string{"was-node-initialize": "Node", "was-node-heartbeat": "Node", "was-pod-ready": "Pod", "was-pod-delete": "Pod"}
	if len(byName) != len(want) {
		t.Errorf("stages %v, want %v", keys(byName), want)
	}
	for name, kind := range want {
		s, ok := byName[name]
		if !ok {
			t.Errorf("missing stage %s", name)
			continue
		}
		if s.Spec.ResourceRef.Kind != kind {
			t.Errorf("%s acts on %s, want %s", name, s.Spec.ResourceRef.Kind, kind)
		}
		if s.Spec.Next.StatusTemplate == "" && !s.Spec.Next.Delete {
			t.Errorf("%s changes nothing", name)
		}
	}
	if !byName["was-pod-delete"].Spec.Next.Delete {
		t.Error("was-pod-delete must delete the pod")
	}
	if !strings.Contains(byName["was-pod-ready"].Spec.Next.StatusTemplate, "phase: Running") {
		t.Error("was-pod-ready must make the pod Running")
	}
}

func keys(m map[string]kwokv1alpha1.Stage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

func TestResourceSlicesPublishDevicesPerNode(t *testing.T) {
	topo := DefaultTopology()
	slices := topo.ResourceSlices()
	if len(slices) != topo.Size() {
		t.Fatalf("%d slices for %d nodes", len(slices), topo.Size())
	}
	seen := map[string]bool{}
	for _, s := range slices {
		if s.Spec.NodeName == nil || s.Spec.Pool.Name != *s.Spec.NodeName || s.Spec.Driver != DeviceDriver {
			t.Errorf("slice %s: node %v, pool %q, driver %q", s.Name, s.Spec.NodeName, s.Spec.Pool.Name, s.Spec.Driver)
		}
		if len(s.Spec.Devices) != topo.DevicesPerNode || s.Spec.Pool.ResourceSliceCount != 1 {
			t.Errorf("slice %s: %d devices, %d slices in pool", s.Name, len(s.Spec.Devices), s.Spec.Pool.ResourceSliceCount)
		}
		if seen[s.Name] {
			t.Errorf("duplicate slice name %s", s.Name)
		}
		seen[s.Name] = true
	}
	topo.DevicesPerNode = 0
	if got := topo.ResourceSlices(); got != nil {
		t.Errorf("DevicesPerNode 0 published %d slices", len(got))
	}
	if sel := DeviceClass().Spec.Selectors; len(sel) != 1 || sel[0].CEL == nil || sel[0].CEL.Expression != `device.driver == "gpu.was-harness.io"` {
		t.Errorf("DeviceClass selectors %+v", sel)
	}
}
