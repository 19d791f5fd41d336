package framework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// allocatedOn is a claim as kube-scheduler leaves it for a node-local device
// (the shape measured on the harness cluster).
func allocatedOn(node string, consumers ...resourcev1.ResourceClaimConsumerReference) *resourcev1.ResourceClaim {
	c := ResourceClaim("c", "ns")
	c.Status.Allocation = &resourcev1.AllocationResult{NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
	}}}}
	c.Status.ReservedFor = consumers
	return c
}

func TestClaimNode(t *testing.T) {
	if got := ClaimNode(allocatedOn("kwok-zone-a-rack-0-0")); got != "kwok-zone-a-rack-0-0" {
		t.Errorf("ClaimNode = %q", got)
	}
	if got := ClaimNode(ResourceClaim("c", "ns")); got != "" {
		t.Errorf("unallocated claim: ClaimNode = %q, want empty", got)
	}
	empty := ResourceClaim("c", "ns")
	empty.Status.Allocation = &resourcev1.AllocationResult{} // a claim without requests
	if got := ClaimNode(empty); got != "" {
		t.Errorf("allocation without nodeSelector: ClaimNode = %q, want empty", got)
	}
}

func TestReservedOnlyFor(t *testing.T) {
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg", UID: "u1"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u2"}}
	if !ReservedOnlyFor(allocatedOn("n", PodGroupConsumer(pg)), PodGroupConsumer(pg)) {
		t.Error("a claim reserved for the PodGroup alone must match")
	}
	for name, c := range map[string]*resourcev1.ResourceClaim{
		"for the pod":           allocatedOn("n", PodConsumer(pod)),
		"for group and pod":     allocatedOn("n", PodGroupConsumer(pg), PodConsumer(pod)),
		"for a recreated group": allocatedOn("n", resourcev1.ResourceClaimConsumerReference{APIGroup: "scheduling.k8s.io", Resource: "podgroups", Name: "pg", UID: "old"}),
		"not allocated":         ResourceClaim("c", "ns"),
	} {
		if ReservedOnlyFor(c, PodGroupConsumer(pg)) {
			t.Errorf("claim %s: ReservedOnlyFor the PodGroup = true", name)
		}
	}
}

func TestClaimNamesAndOwners(t *testing.T) {
	pod := &corev1.Pod{Status: corev1.PodStatus{ResourceClaimStatuses: []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To("pg-gpu-x")}}}}
	if got := PodClaimName(pod, "gpu"); got != "pg-gpu-x" {
		t.Errorf("PodClaimName = %q", got)
	}
	if got := PodClaimName(pod, "other"); got != "" {
		t.Errorf("PodClaimName of a missing entry = %q", got)
	}
	// A named claim is not recorded in the status: it is the spec's.
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "named", ResourceClaimName: ptr.To("shared-gpu")}}
	if got := PodClaimName(pod, "named"); got != "shared-gpu" {
		t.Errorf("PodClaimName of a named claim = %q", got)
	}
	pg := &schedulingv1beta1.PodGroup{Spec: schedulingv1beta1.PodGroupSpec{ResourceClaims: []schedulingv1beta1.PodGroupResourceClaim{
		{Name: "named", ResourceClaimName: ptr.To("shared-gpu")}, {Name: "gpu", ResourceClaimTemplateName: ptr.To("t")}}}}
	if got := PodGroupClaimName(pg, "named"); got != "shared-gpu" {
		t.Errorf("PodGroupClaimName of a named claim = %q", got)
	}
	if got := PodGroupClaimName(pg, "gpu"); got != "" {
		t.Errorf("PodGroupClaimName of a template entry before the controller resolved it = %q", got)
	}
	pg.Status.ResourceClaimStatuses = []schedulingv1beta1.PodGroupResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To("pg-gpu-x")}}
	if got := PodGroupClaimName(pg, "gpu"); got != "pg-gpu-x" {
		t.Errorf("PodGroupClaimName of a resolved template entry = %q", got)
	}
	owned := *ResourceClaim("owned", "ns")
	owned.OwnerReferences = []metav1.OwnerReference{{Kind: "PodGroup", Name: "pg", UID: "u1", Controller: ptr.To(true)}}
	other := *ResourceClaim("other", "ns")
	other.OwnerReferences = []metav1.OwnerReference{{Kind: "PodGroup", Name: "pg", UID: "u1"}} // not the controller
	if got := ClaimsControlledBy([]resourcev1.ResourceClaim{owned, other}, "u1"); len(got) != 1 || got[0].Name != "owned" {
		t.Errorf("ClaimsControlledBy = %v", got)
	}
}

func TestClaimTemplates(t *testing.T) {
	if reqs := ResourceClaimTemplate("t", "ns", 2).Spec.Spec.Devices.Requests; len(reqs) != 2 || reqs[1].Exactly.DeviceClassName != DeviceClassName || reqs[0].Name == reqs[1].Name {
		t.Errorf("two-device template requests %+v", reqs)
	}
	if reqs := ResourceClaimTemplate("t", "ns", 0).Spec.Spec.Devices.Requests; len(reqs) != 0 {
		t.Errorf("zero-device template requests %+v", reqs)
	}
}
