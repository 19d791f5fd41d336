package framework

import (
	"context"
	"fmt"
	"path"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Persistent volumes for StatefulSet volumeClaimTemplates. The harness's
// cluster has no provisioner and kind's (local-path) is not everyone's, so a
// spec pre-binds one static PersistentVolume to each PVC name the StatefulSet
// controller will make (<template>-<set>-<ordinal>), with storageClassName ""
// on both sides (builder.StatefulSetWrapper.VolumeClaimTemplate): the PV
// controller binds them the same way on every cluster, and no default
// StorageClass provisions a volume of its own.

// CreateStaticVolumes creates one PersistentVolume of size for each PVC name
// in the spec's namespace, reserved for it by spec.claimRef, reclaim policy
// Retain, backed by a hostPath directory (kwok nodes mount nothing; a real
// kubelet creates the directory). PersistentVolumes are cluster-scoped and
// outlive the namespace: each is deleted at cleanup (its pv-protection
// finalizer lets it go once the namespace's PVC is gone).
func CreateStaticVolumes(ctx context.Context, f *Framework, size string, claims ...string) {
	ginkgo.GinkgoHelper()
	for _, claim := range claims {
		pv := StaticVolume(f.Namespace+"-"+claim, f.Namespace, claim, size)
		_, err := f.ClientSet.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating PersistentVolume %s for PVC %s", pv.Name, claim)
		ginkgo.DeferCleanup(func(ctx context.Context) {
			err := f.ClientSet.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "deleting PersistentVolume %s", pv.Name)
			}
		})
	}
}

// StaticVolume is a PersistentVolume named name reserved for PVC
// namespace/claim (see CreateStaticVolumes).
func StaticVolume(name, namespace, claim, size string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "",
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: namespace, Name: claim},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: path.Join("/tmp/was-volumes", name), Type: ptr.To(corev1.HostPathDirectoryOrCreate)}},
		},
	}
}

// BoundClaim is what a spec records of a PVC: its identity and the volume it
// is bound to.
type BoundClaim struct {
	Name   string
	UID    types.UID
	Volume string
}

func (c BoundClaim) String() string {
	return fmt.Sprintf("%s(uid %s, volume %s)", c.Name, c.UID, c.Volume)
}

// ReadBoundClaims reads the PVCs named claims: each live (no
// deletionTimestamp) and Bound to a volume whose claimRef names its UID.
// The string is why not, empty when all are; the claims are as read.
func ReadBoundClaims(ctx context.Context, f *Framework, claims ...string) ([]BoundClaim, string, error) {
	var out []BoundClaim
	for _, name := range claims {
		pvc, err := f.ClientSet.CoreV1().PersistentVolumeClaims(f.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return out, fmt.Sprintf("PVC %s does not exist", name), nil
		}
		if err != nil {
			return nil, "", err
		}
		if pvc.DeletionTimestamp != nil {
			return out, fmt.Sprintf("PVC %s (uid %s) is being deleted (finalizers %v)", name, pvc.UID, pvc.Finalizers), nil
		}
		if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
			return out, fmt.Sprintf("PVC %s (uid %s) is %s, volume %q", name, pvc.UID, pvc.Status.Phase, pvc.Spec.VolumeName), nil
		}
		pv, err := f.ClientSet.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return nil, "", err
		}
		if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != pvc.UID || pv.Status.Phase != corev1.VolumeBound {
			return out, fmt.Sprintf("PersistentVolume %s of PVC %s (uid %s) is %s with claimRef %v", pv.Name, name, pvc.UID, pv.Status.Phase, ref), nil
		}
		out = append(out, BoundClaim{Name: name, UID: pvc.UID, Volume: pv.Name})
	}
	return out, "", nil
}

// WaitForBoundClaims waits until ReadBoundClaims finds every PVC named
// claims bound, and returns them.
func WaitForBoundClaims(ctx context.Context, f *Framework, claims ...string) []BoundClaim {
	var out []BoundClaim
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) (string, error) {
		got, why, err := ReadBoundClaims(ctx, f, claims...)
		out = got
		return why, err
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.BeEmpty(), "waiting for PVCs %v to be bound", claims)
	return out
}

// PodClaimNames returns the PVC names pod's volumes use, by volume name.
func PodClaimNames(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out[v.Name] = v.PersistentVolumeClaim.ClaimName
		}
	}
	return out
}
