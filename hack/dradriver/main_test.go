package main

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
)

// The kubelet learns from PrepareResourceClaims which allocated device
// serves which request: every claim gets an entry, an allocated one lists its
// devices, and one that is not allocated is an error for that claim only.
func TestPrepareReportsTheAllocatedDevices(t *testing.T) {
	allocated := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "uid-a"},
		Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{
				{Request: "gpu-0", Driver: "gpu.was-harness.io", Pool: "node-1", Device: "gpu-1"},
				{Request: "gpu-1", Driver: "gpu.was-harness.io", Pool: "node-1", Device: "gpu-0"},
			},
		}}},
	}
	pending := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-p"}}
	p := &plugin{logger: klog.Background()}
	got, err := p.PrepareResourceClaims(context.Background(), []*resourceapi.ResourceClaim{allocated, pending})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d results for 2 claims: %v", len(got), got)
	}
	a := got[types.UID("uid-a")]
	want := []kubeletplugin.Device{
		{Requests: []string{"gpu-0"}, PoolName: "node-1", DeviceName: "gpu-1"},
		{Requests: []string{"gpu-1"}, PoolName: "node-1", DeviceName: "gpu-0"},
	}
	if a.Err != nil || len(a.Devices) != len(want) {
		t.Fatalf("allocated claim: %+v, want devices %+v", a, want)
	}
	for i := range want {
		if a.Devices[i].Requests[0] != want[i].Requests[0] || a.Devices[i].PoolName != want[i].PoolName || a.Devices[i].DeviceName != want[i].DeviceName {
			t.Errorf("device %d: %+v, want %+v", i, a.Devices[i], want[i])
		}
	}
	if got[types.UID("uid-p")].Err == nil {
		t.Errorf("a claim without allocation was prepared: %+v", got[types.UID("uid-p")])
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	if err := run("gpu.was-harness.io", "", 2); err == nil {
		t.Error("an empty node name was accepted")
	}
	if err := run("gpu.was-harness.io", "n", 129); err == nil {
		t.Error("129 devices per node were accepted (a ResourceSlice holds at most 128)")
	}
}
