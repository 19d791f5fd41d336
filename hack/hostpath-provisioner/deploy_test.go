package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/yaml"
)

// TestDeployManifestAgrees keeps deploy.yaml's pieces consistent: the class
// names the provisioner the DaemonSet serves, binds WaitForFirstConsumer
// (Provision needs the scheduler's node), and --root is the mounted path.
func TestDeployManifestAgrees(t *testing.T) {
	data, err := os.ReadFile("deploy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var class *storagev1.StorageClass
	var ds *appsv1.DaemonSet
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "StorageClass":
			class = &storagev1.StorageClass{}
			err = yaml.UnmarshalStrict([]byte(doc), class)
		case "DaemonSet":
			ds = &appsv1.DaemonSet{}
			err = yaml.UnmarshalStrict([]byte(doc), ds)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if class == nil || ds == nil {
		t.Fatalf("deploy.yaml: want a StorageClass and a DaemonSet, got %v %v", class, ds)
	}
	if class.VolumeBindingMode == nil || *class.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		t.Errorf("StorageClass %s: want volumeBindingMode WaitForFirstConsumer, got %v", class.Name, class.VolumeBindingMode)
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
	mounted := slices.ContainsFunc(c.VolumeMounts, func(m v1.VolumeMount) bool { return m.MountPath == root })
	if root == "" || !mounted {
		t.Errorf("--root=%q is not a mounted path of the DaemonSet (%v)", root, c.VolumeMounts)
	}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.HostPath != nil && v.HostPath.Path != root {
			t.Errorf("hostPath %s: want the same path on the node as --root (%s): a volume's hostPath is the directory made in the container", v.HostPath.Path, root)
		}
	}
}
