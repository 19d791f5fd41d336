// Command hostpath-provisioner gives a kind cluster a working default
// StorageClass, so that upstream's StatefulSet specs with volumeClaimTemplates
// (PVC retention, rolling updates with PVCs, identity) run under make
// parity-kind instead of failing on kind's fallback class, whose in-tree
// kubernetes.io/host-path provisioner no longer exists. kind's own
// local-path-provisioner image cannot be pulled here (no registry), so this
// one is built from the module proxy like the rest of the cluster.
//
// It runs as a DaemonSet (hack/hostpath-provisioner/deploy.yaml), one
// instance per node, built on sigs.k8s.io/sig-storage-lib-external-provisioner.
// The class binds WaitForFirstConsumer, so the scheduler picks the node first;
// the instance on that node creates a directory under --root and returns a
// hostPath PersistentVolume pinned to the node (its hostname label). Deletion runs on the same
// node, so the directory goes with the volume. Without leader election,
// every instance sees every claim and acts only on its own node's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

// nodeAnnotation records the node whose directory backs a volume, so that
// Delete need not parse the node affinity back.
const nodeAnnotation = "hostpath.was-harness.io/node"

func main() {
	name := flag.String("provisioner-name", "hostpath.was-harness.io", "the StorageClass's provisioner field")
	root := flag.String("root", "/var/lib/was-hostpath", "the directory, on every node, that holds the volumes")
	node := flag.String("node-name", os.Getenv("NODE_NAME"), "this node (env NODE_NAME, from the downward API)")
	klog.InitFlags(nil)
	flag.Parse()
	if err := run(*name, *root, *node); err != nil {
		fmt.Fprintln(os.Stderr, "hostpath-provisioner:", err)
		os.Exit(1)
	}
}

func run(name, root, node string) error {
	if node == "" {
		return errors.New("--node-name (or NODE_NAME) is empty")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return fmt.Errorf("in-cluster config: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	// The volumes' node affinity names the node by its hostname label, as
	// local volumes do: the scheduler's volume binding checks a volume's
	// node affinity against the node's labels (CheckNodeAffinity(pv,
	// node.Labels)), which lets a matchFields term on metadata.name match
	// every node (main_test.go). With such a term, a restarted pod of
	// upstream's "basic identity" spec landed on another node and found no
	// directory there.
	n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading this node's hostname label: %w", err)
	}
	hostname := n.Labels[v1.LabelHostname]
	if hostname == "" {
		return fmt.Errorf("node %s has no %s label", node, v1.LabelHostname)
	}
	p := &provisioner{root: root, node: node, hostname: hostname}
	controller.NewProvisionController(ctx, client, name, p, controller.LeaderElection(false)).Run(ctx)
	return nil
}

// provisioner implements controller.Provisioner and controller.Qualifier for
// the volumes of one node.
type provisioner struct {
	root     string // the volumes' parent directory, the same path in this container and on the node
	node     string
	hostname string // the node's kubernetes.io/hostname label
}

var (
	_ controller.Provisioner = (*provisioner)(nil)
	_ controller.Qualifier   = (*provisioner)(nil)
)

// ShouldProvision: only claims the scheduler placed on this node. Without a
// selected node (a class binding Immediate) no instance could know where the
// pod will run, so none provisions.
func (p *provisioner) ShouldProvision(_ context.Context, pvc *v1.PersistentVolumeClaim) bool {
	return pvc.Annotations["volume.kubernetes.io/selected-node"] == p.node
}

func (p *provisioner) Provision(_ context.Context, opts controller.ProvisionOptions) (*v1.PersistentVolume, controller.ProvisioningState, error) {
	if opts.SelectedNodeName != p.node {
		return nil, controller.ProvisioningFinished, &controller.IgnoredError{Reason: fmt.Sprintf("claim is for node %q, this is %q", opts.SelectedNodeName, p.node)}
	}
	if opts.PVC.Spec.VolumeMode != nil && *opts.PVC.Spec.VolumeMode == v1.PersistentVolumeBlock {
		return nil, controller.ProvisioningFinished, errors.New("volumeMode Block is not supported: a hostPath volume is a directory")
	}
	dir := filepath.Join(p.root, opts.PVName)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	// Any pod's user may write: the specs' containers run as various users.
	if err := os.Chmod(dir, 0o777); err != nil {
		return nil, controller.ProvisioningFinished, err
	}
	return p.volume(opts, dir), controller.ProvisioningFinished, nil
}

// volume is the PersistentVolume for a provisioned directory: the claim's
// size and access modes, the class's reclaim policy, pinned to this node.
func (p *provisioner) volume(opts controller.ProvisionOptions, dir string) *v1.PersistentVolume {
	reclaim := v1.PersistentVolumeReclaimDelete
	if opts.StorageClass.ReclaimPolicy != nil {
		reclaim = *opts.StorageClass.ReclaimPolicy
	}
	hostPathType := v1.HostPathDirectory
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        opts.PVName,
			Annotations: map[string]string{nodeAnnotation: p.node},
		},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			AccessModes:                   opts.PVC.Spec.AccessModes,
			MountOptions:                  opts.StorageClass.MountOptions,
			Capacity:                      v1.ResourceList{v1.ResourceStorage: opts.PVC.Spec.Resources.Requests[v1.ResourceStorage]},
			PersistentVolumeSource: v1.PersistentVolumeSource{
				HostPath: &v1.HostPathVolumeSource{Path: dir, Type: &hostPathType},
			},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{
					Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{p.hostname},
				}}}},
			}},
		},
	}
}

// Delete removes the directory of a volume on this node; another node's
// volume is left to that node's instance.
func (p *provisioner) Delete(_ context.Context, pv *v1.PersistentVolume) error {
	if node := pv.Annotations[nodeAnnotation]; node != p.node {
		return &controller.IgnoredError{Reason: fmt.Sprintf("volume is on node %q, this is %q", node, p.node)}
	}
	if pv.Spec.HostPath == nil || filepath.Dir(pv.Spec.HostPath.Path) != filepath.Clean(p.root) {
		return fmt.Errorf("volume %s: not a directory under %s", pv.Name, p.root)
	}
	return os.RemoveAll(pv.Spec.HostPath.Path)
}
