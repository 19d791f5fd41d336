// Package kwoknodes declares the simulated nodes of a harness cluster and the
// kwok stages that give them, and the pods bound to them, a lifecycle.
//
// Nodes come from a topology (zones x racks x nodes, each with the same
// capacity) so gang and topology-aware specs have real capacity to fight over
// and real domains to land in. The nodes carry no kwok taint: pods need no
// toleration, exactly as on a real cluster.
package kwoknodes

import (
	_ "embed"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// ZoneLabel and HostnameLabel are the well-known Kubernetes labels.
	ZoneLabel     = corev1.LabelTopologyZone
	HostnameLabel = corev1.LabelHostname
	// RackLabel names a node's rack, a domain smaller than a zone: the key the
	// KEPs' examples use (not a label Kubernetes itself sets).
	RackLabel = "topology.kubernetes.io/rack"
	// ManagedLabel marks nodes this package created (value "true").
	ManagedLabel = "was-harness.io/kwok-node"
	// ManagedAnnotation is what kwok's --manage-nodes-with-annotation-selector matches.
	ManagedAnnotation      = "kwok.x-k8s.io/node"
	ManagedAnnotationValue = "fake"
)

// Capacity is one node's allocatable resources.
type Capacity struct {
	CPU    string `json:"cpu"`
	Memory string `json:"memory"`
	Pods   string `json:"pods"`
	// GPUs is the node's nvidia.com/gpu extended resource (the KEPs' examples
	// ask for GPUs); empty means none.
	GPUs string `json:"gpus,omitempty"`
}

// GPUResource is the extended resource the KEPs' examples request.
const GPUResource = corev1.ResourceName("nvidia.com/gpu")

// Topology is zones x racks per zone x nodes per rack, all alike.
type Topology struct {
	Zones        int      `json:"zones"`
	RacksPerZone int      `json:"racksPerZone"`
	NodesPerRack int      `json:"nodesPerRack"`
	Capacity     Capacity `json:"capacity"`
	// DevicesPerNode is how many DRA devices of DeviceDriver each node
	// publishes in a ResourceSlice (0: none). No kubelet runs here: the
	// scheduler allocates and the ResourceClaim controller reserves, which is
	// all a PodGroup-level claim needs.
	DevicesPerNode int `json:"devicesPerNode,omitempty"`
}

// DeviceDriver and DeviceClassName are the simulated DRA driver and the
// DeviceClass that selects its devices.
const (
	DeviceDriver    = "gpu.was-harness.io"
	DeviceClassName = "gpu.was-harness.io"
)

// DefaultTopology is 2 zones x 2 racks x 2 nodes of 4 CPU, 16Gi, 110 pods, 4
// GPUs (extended resource) and 2 DRA devices.
func DefaultTopology() Topology {
	return Topology{Zones: 2, RacksPerZone: 2, NodesPerRack: 2, Capacity: Capacity{CPU: "4", Memory: "16Gi", Pods: "110", GPUs: "4"}, DevicesPerNode: 2}
}

// Validate names the field that is wrong.
func (t Topology) Validate() error {
	if t.Zones < 1 || t.RacksPerZone < 1 || t.NodesPerRack < 1 {
		return fmt.Errorf("topology needs at least 1 zone, rack and node (got zones=%d racksPerZone=%d nodesPerRack=%d)", t.Zones, t.RacksPerZone, t.NodesPerRack)
	}
	if t.Zones > 26 {
		return fmt.Errorf("topology.zones=%d: at most 26 zones (named zone-a..zone-z)", t.Zones)
	}
	if t.DevicesPerNode < 0 || t.DevicesPerNode > 128 {
		return fmt.Errorf("topology.devicesPerNode=%d: want 0..128 (a ResourceSlice holds at most 128 devices)", t.DevicesPerNode)
	}
	for field, q := range map[string]string{"cpu": t.Capacity.CPU, "memory": t.Capacity.Memory, "pods": t.Capacity.Pods, "gpus": t.Capacity.GPUs} {
		if field == "gpus" && q == "" {
			continue
		}
		if _, err := resource.ParseQuantity(q); err != nil {
			return fmt.Errorf("topology.capacity.%s=%q: %v", field, q, err)
		}
	}
	return nil
}

// Size is the number of nodes.
func (t Topology) Size() int { return t.Zones * t.RacksPerZone * t.NodesPerRack }

// ZoneName and RackName are the label values of zone z and rack r (0-based).
func ZoneName(z int) string    { return fmt.Sprintf("zone-%c", 'a'+z) }
func RackName(z, r int) string { return fmt.Sprintf("%s-rack-%d", ZoneName(z), r) }

// NodeName is the name of node n of rack r in zone z.
func NodeName(z, r, n int) string { return fmt.Sprintf("kwok-%s-%d", RackName(z, r), n) }

// Nodes returns the Node objects to create. Their status capacity is set
// here; kwok's node-initialize stage keeps it and adds the conditions.
func (t Topology) Nodes() []corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(t.Capacity.CPU),
		corev1.ResourceMemory: resource.MustParse(t.Capacity.Memory),
		corev1.ResourcePods:   resource.MustParse(t.Capacity.Pods),
	}
	if t.Capacity.GPUs != "" {
		capacity[GPUResource] = resource.MustParse(t.Capacity.GPUs)
	}
	var out []corev1.Node
	for z := range t.Zones {
		for r := range t.RacksPerZone {
			for n := range t.NodesPerRack {
				name := NodeName(z, r, n)
				out = append(out, corev1.Node{
					ObjectMeta: metav1.ObjectMeta{
						Name: name,
						Labels: map[string]string{
							ZoneLabel:                        ZoneName(z),
							RackLabel:                        RackName(z, r),
							HostnameLabel:                    name,
							ManagedLabel:                     "true",
							corev1.LabelOSStable:             "linux",
							corev1.LabelArchStable:           "amd64",
							"node-role.kubernetes.io/worker": "",
						},
						Annotations: map[string]string{ManagedAnnotation: ManagedAnnotationValue},
					},
					Status: corev1.NodeStatus{Capacity: capacity.DeepCopy(), Allocatable: capacity.DeepCopy()},
				})
			}
		}
	}
	return out
}

// Schedulable reports whether the scheduler will consider the node: Ready
// and without a NoSchedule/NoExecute taint (the node lifecycle controller
// removes node.kubernetes.io/not-ready once it sees the Ready condition).
func Schedulable(n *corev1.Node) bool {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	return ready && !n.Spec.Unschedulable
}

//go:embed stages.yaml
var stages []byte

// Stages is the kwok configuration (kwok.x-k8s.io/v1alpha1 Stage objects)
// that drives node and pod lifecycles; pass it to kwok with --config.
func Stages() []byte { return stages }

// DeviceClass selects the simulated driver's devices.
func DeviceClass() *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: DeviceClassName},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", DeviceDriver)},
		}}},
	}
}

// ResourceSlices publishes DevicesPerNode devices (gpu-0, gpu-1, ...) per
// node, one pool per node, as a DRA driver's kubelet plugin would.
func (t Topology) ResourceSlices() []resourcev1.ResourceSlice {
	if t.DevicesPerNode <= 0 {
		return nil
	}
	var out []resourcev1.ResourceSlice
	for _, n := range t.Nodes() {
		slice := resourcev1.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name + "-" + strings.ReplaceAll(DeviceDriver, ".", "-")},
			Spec: resourcev1.ResourceSliceSpec{
				Driver:   DeviceDriver,
				NodeName: &n.Name,
				Pool:     resourcev1.ResourcePool{Name: n.Name, Generation: 1, ResourceSliceCount: 1},
			},
		}
		for i := range t.DevicesPerNode {
			slice.Spec.Devices = append(slice.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i)})
		}
		out = append(out, slice)
	}
	return out
}
