package kindconfig

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// TestHostpathProvisionerManifestAgrees keeps hack/hostpath-provisioner/deploy.yaml,
// which gives make parity-kind a default StorageClass that provisions,
// consistent: the class names the provisioner the DaemonSet serves, binds
// WaitForFirstConsumer (Provision needs the scheduler's node), --root is
// the mounted path and the same path on the node (a volume's hostPath is
// the directory made in the container), and the image is the one
// hack/e2e-kind.sh builds and loads.
func TestHostpathProvisionerManifestAgrees(t *testing.T) {
	docs := manifestDocs(t, "../hack/hostpath-provisioner/deploy.yaml")
	class, ds := &storagev1.StorageClass{}, &appsv1.DaemonSet{}
	decodeDoc(t, docs, "StorageClass", class)
	decodeDoc(t, docs, "DaemonSet", ds)
	if mode := class.VolumeBindingMode; mode == nil || *mode != storagev1.VolumeBindingWaitForFirstConsumer {
		got := "unset (Immediate)"
		if mode != nil {
			got = string(*mode)
		}
		t.Errorf("StorageClass %s: want volumeBindingMode WaitForFirstConsumer, got %s", class.Name, got)
	}
	if class.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" {
		t.Errorf("StorageClass %s is not the default class", class.Name)
	}
	c := ds.Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--provisioner-name="+class.Provisioner) {
		t.Errorf("the DaemonSet's args %v do not serve the class's provisioner %s", c.Args, class.Provisioner)
	}
	var root string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--root="); ok {
			root = v
		}
	}
	if root == "" || !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == root }) {
		t.Errorf("--root=%q is not a mounted path of the DaemonSet (%v)", root, c.VolumeMounts)
	}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.HostPath != nil && v.HostPath.Path != root {
			t.Errorf("hostPath %s: want the same path on the node as --root (%s)", v.HostPath.Path, root)
		}
	}
	script, err := os.ReadFile("../hack/e2e-kind.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^HOSTPATH_PROVISIONER_IMAGE=(\S+)$`).FindSubmatch(script)
	if m == nil {
		t.Fatal("hack/e2e-kind.sh no longer sets HOSTPATH_PROVISIONER_IMAGE: keep this test in step")
	}
	if c.Image != string(m[1]) {
		t.Errorf("the DaemonSet's image %q is not the one hack/e2e-kind.sh builds and loads (%s)", c.Image, m[1])
	}
}
