package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

func claimOn(node string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "datadir-ss-0", Annotations: map[string]string{"volume.kubernetes.io/selected-node": node}},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

func TestProvisionOnItsOwnNodeOnly(t *testing.T) {
	root := t.TempDir()
	p := &provisioner{root: root, node: "worker", hostname: "worker-host"}
	ctx := context.Background()
	if p.ShouldProvision(ctx, claimOn("worker2")) {
		t.Error("ShouldProvision: want false for a claim placed on another node")
	}
	if !p.ShouldProvision(ctx, claimOn("worker")) {
		t.Error("ShouldProvision: want true for a claim placed on this node")
	}
	opts := controller.ProvisionOptions{StorageClass: &storagev1.StorageClass{}, PVName: "pvc-1", PVC: claimOn("worker2"), SelectedNodeName: "worker2"}
	if _, _, err := p.Provision(ctx, opts); !errors.As(err, new(*controller.IgnoredError)) {
		t.Fatalf("Provision for another node: want IgnoredError, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "pvc-1")); !os.IsNotExist(err) {
		t.Errorf("Provision for another node created its directory: %v", err)
	}

	opts.PVC, opts.SelectedNodeName = claimOn("worker"), "worker"
	pv, state, err := p.Provision(ctx, opts)
	if err != nil || state != controller.ProvisioningFinished {
		t.Fatalf("Provision: %v, %s", err, state)
	}
	dir := filepath.Join(root, "pvc-1")
	if st, err := os.Stat(dir); err != nil || !st.IsDir() || st.Mode().Perm() != 0o777 {
		t.Fatalf("the volume's directory: %v, %v", st, err)
	}
	if pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != dir {
		t.Errorf("hostPath: want %s, got %+v", dir, pv.Spec.HostPath)
	}
	if got := pv.Spec.Capacity[v1.ResourceStorage]; got.String() != "1Gi" {
		t.Errorf("capacity: want the claim's 1Gi, got %s", got.String())
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
		t.Errorf("reclaim policy: want Delete by default, got %s", pv.Spec.PersistentVolumeReclaimPolicy)
	}
	// The scheduler matches a volume's node affinity against node labels
	// only: the term must name the hostname label, not metadata.name.
	terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
	want := v1.NodeSelectorRequirement{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{"worker-host"}}
	if len(terms) != 1 || len(terms[0].MatchFields) != 0 || len(terms[0].MatchExpressions) != 1 || !equality.Semantic.DeepEqual(terms[0].MatchExpressions[0], want) {
		t.Errorf("node affinity: want the volume pinned by %+v, got %+v", want, terms)
	}
	// The scheduler's own check (VolumeBinding): the volume fits its node only.
	if err := volumehelpers.CheckNodeAffinity(pv, map[string]string{v1.LabelHostname: "worker-host"}); err != nil {
		t.Errorf("the volume does not fit its own node: %v", err)
	}
	if err := volumehelpers.CheckNodeAffinity(pv, map[string]string{v1.LabelHostname: "worker2-host"}); err == nil {
		t.Error("the volume fits another node")
	}

	other := &provisioner{root: root, node: "worker2"}
	if err := other.Delete(ctx, pv); !errors.As(err, new(*controller.IgnoredError)) {
		t.Fatalf("Delete on another node: want IgnoredError, got %v", err)
	}
	if err := p.Delete(ctx, pv); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Delete left the directory: %v", err)
	}
}

func TestDeleteRefusesAPathOutsideTheRoot(t *testing.T) {
	p := &provisioner{root: t.TempDir(), node: "worker"}
	outside := t.TempDir()
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-x", Annotations: map[string]string{nodeAnnotation: "worker"}},
		Spec:       v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: outside}}},
	}
	if err := p.Delete(context.Background(), pv); err == nil {
		t.Fatal("Delete of a path outside --root: want an error")
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("Delete removed a path outside --root: %v", err)
	}
}

func TestBlockVolumesAreRefused(t *testing.T) {
	p := &provisioner{root: t.TempDir(), node: "worker"}
	claim := claimOn("worker")
	block := v1.PersistentVolumeBlock
	claim.Spec.VolumeMode = &block
	_, _, err := p.Provision(context.Background(), controller.ProvisionOptions{StorageClass: &storagev1.StorageClass{}, PVName: "pvc-b", PVC: claim, SelectedNodeName: "worker"})
	if err == nil {
		t.Fatal("Provision of a Block volume: want an error")
	}
}
