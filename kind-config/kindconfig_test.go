// Package kindconfig checks the kind cluster configurations in this
// directory with kind's own v1alpha4 types (strictly, as kind decodes them)
// and the kubeadm v1beta4 types their patches target, against the gates,
// API versions and replaced controllers of api/cluster's table, which the
// local cluster reads too, so a kind cluster and `make e2e` test the same
// configuration.
package kindconfig

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	kubeletapis "k8s.io/kubelet/pkg/apis"
	kubeadmv1beta4 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	kinddefaults "sigs.k8s.io/kind/pkg/apis/config/defaults"
	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/workload-aware/apps-harness/api/cluster"
	"github.com/workload-aware/apps-harness/pkg/kwoknodes"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// RackLabel carries a worker's rack through kind: the kubelet refuses to set
// topology.kubernetes.io/rack on its own Node, so hack/e2e-kind.sh copies
// this label to kwoknodes.RackLabel after the cluster is up.
const RackLabel = "was-harness.io/rack"

// DefaultWorkers is how many of the file's workers make e2e-kind keeps
// (KIND_WORKERS in hack/e2e-kind.sh).
const DefaultWorkers = 3

func configs(t *testing.T) map[string]*kindv1alpha4.Cluster {
	t.Helper()
	// was-<version>.yaml; audit-policy.yaml is kube-apiserver's (e2ekind_test.go).
	files, err := filepath.Glob("was-*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no kind configuration in kind-config/ (%v)", err)
	}
	out := map[string]*kindv1alpha4.Cluster{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		c := &kindv1alpha4.Cluster{}
		// kind decodes its configuration strictly (unknown fields are errors).
		if err := yaml.UnmarshalStrict(data, c); err != nil {
			t.Fatalf("%s: not a valid kind v1alpha4 Cluster: %v", f, err)
		}
		if c.Kind != "Cluster" || c.APIVersion != "kind.x-k8s.io/v1alpha4" {
			t.Fatalf("%s: kind %q apiVersion %q, want Cluster kind.x-k8s.io/v1alpha4", f, c.Kind, c.APIVersion)
		}
		kindv1alpha4.SetDefaultsCluster(c)
		out[f] = c
	}
	return out
}

// clusterConfiguration decodes the one ClusterConfiguration patch strictly.
func clusterConfiguration(t *testing.T, file string, c *kindv1alpha4.Cluster) *kubeadmv1beta4.ClusterConfiguration {
	t.Helper()
	var found *kubeadmv1beta4.ClusterConfiguration
	for _, p := range c.KubeadmConfigPatches {
		var tm struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal([]byte(p), &tm); err != nil {
			t.Fatalf("%s: kubeadm patch: %v", file, err)
		}
		if tm.Kind == "KubeletConfiguration" {
			kubeletPatch(t, file, p)
			continue
		}
		if tm.Kind != "ClusterConfiguration" {
			t.Errorf("%s: unexpected kubeadm patch of kind %q (only ClusterConfiguration, and the kubelet's one gate)", file, tm.Kind)
			continue
		}
		if tm.APIVersion != "kubeadm.k8s.io/v1beta4" {
			t.Errorf("%s: ClusterConfiguration apiVersion %q, want kubeadm.k8s.io/v1beta4 (extraArgs as name/value lists)", file, tm.APIVersion)
		}
		cc := &kubeadmv1beta4.ClusterConfiguration{}
		if err := yaml.UnmarshalStrict([]byte(p), cc); err != nil {
			t.Fatalf("%s: ClusterConfiguration patch: %v", file, err)
		}
		if found != nil {
			t.Fatalf("%s: two ClusterConfiguration patches", file)
		}
		found = cc
	}
	if found == nil {
		t.Fatalf("%s: no ClusterConfiguration patch", file)
	}
	return found
}

// kubeletPatch checks the one KubeletConfiguration patch: it turns on
// DRAWorkloadResourceClaims and GenericWorkload, nothing else. The kubelet needs that gate to
// run a pod whose claim is reserved for the pod's PodGroup (KEP-5729: the
// kubelet's resourceclaim.IsReservedForPod accepts a PodGroup reservation only
// with it; without it the pod fails with "is not allowed to use ResourceClaim").
func kubeletPatch(t *testing.T, file, patch string) {
	t.Helper()
	var kc struct {
		APIVersion   string          `json:"apiVersion"`
		Kind         string          `json:"kind"`
		FeatureGates map[string]bool `json:"featureGates"`
	}
	if err := yaml.UnmarshalStrict([]byte(patch), &kc); err != nil {
		t.Fatalf("%s: KubeletConfiguration patch sets more than featureGates: %v", file, err)
	}
	if kc.APIVersion != "kubelet.config.k8s.io/v1beta1" {
		t.Errorf("%s: KubeletConfiguration apiVersion %q, want kubelet.config.k8s.io/v1beta1", file, kc.APIVersion)
	}
	// DRAWorkloadResourceClaims depends on GenericWorkload: a kubelet given
	// the first alone panics at start.
	want := map[string]bool{"DRAWorkloadResourceClaims": true, "GenericWorkload": true}
	if !maps.Equal(kc.FeatureGates, want) {
		t.Errorf("%s: kubelet featureGates %v, want %v: the kubelet's only WAS gate and the gate it depends on", file, kc.FeatureGates, want)
	}
	for g := range want {
		if !cluster.KubeFeatureGates()[g] {
			t.Errorf("%s: the kubelet turns on %s, which api/cluster's control plane does not", file, g)
		}
	}
}

func args(list []kubeadmv1beta4.Arg) map[string]string {
	out := map[string]string{}
	for _, a := range list {
		out[a.Name] = a.Value
	}
	return out
}

func parseGates(t *testing.T, s string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for kv := range strings.SplitSeq(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		b, err := strconv.ParseBool(v)
		if err != nil {
			t.Fatalf("feature gate %q: %v", kv, err)
		}
		out[k] = b
	}
	return out
}

func TestGatesAndRuntimeConfigOnTheControlPlaneOnly(t *testing.T) {
	for file, c := range configs(t) {
		if len(c.FeatureGates) > 0 {
			t.Errorf("%s: cluster-wide featureGates %v also reach the kubelet; set them per component in the ClusterConfiguration patch", file, c.FeatureGates)
		}
		if len(c.RuntimeConfig) > 0 {
			t.Errorf("%s: runtimeConfig %v: keep --runtime-config in the ClusterConfiguration patch, beside the gates", file, c.RuntimeConfig)
		}
		cc := clusterConfiguration(t, file, c)
		components := map[string]map[string]string{
			"kube-apiserver":          args(cc.APIServer.ExtraArgs),
			"kube-controller-manager": args(cc.ControllerManager.ExtraArgs),
			"kube-scheduler":          args(cc.Scheduler.ExtraArgs),
		}
		for name, a := range components {
			if got, want := parseGates(t, a["feature-gates"]), cluster.KubeFeatureGates(); !maps.Equal(got, want) {
				t.Errorf("%s: %s feature-gates %v, want api/cluster's Kubernetes gates %v", file, name, got, want)
			}
		}
		wantRC := localcluster.FormatRuntimeConfig(cluster.RuntimeConfig())
		if got := components["kube-apiserver"]["runtime-config"]; got != wantRC {
			t.Errorf("%s: kube-apiserver runtime-config %q, want %q", file, got, wantRC)
		}
		// kubeadm's own --controllers adds the two controllers that sign and
		// clean bootstrap tokens (off under "*"); without them no worker joins
		// ("could not find a JWS signature in the cluster-info ConfigMap").
		wantControllers := "*,bootstrapsigner,tokencleaner" + strings.TrimPrefix(cluster.KubeControllers(), "*")
		if got := components["kube-controller-manager"]["controllers"]; got != wantControllers {
			t.Errorf("%s: kube-controller-manager controllers %q, want %q (the reference implementation replaces those)", file, got, wantControllers)
		}
		for i, n := range c.Nodes {
			if len(n.KubeadmConfigPatches) > 0 || len(n.KubeadmConfigPatchesJSON6902) > 0 {
				t.Errorf("%s: node %d has its own kubeadm patches; keep them cluster-wide", file, i)
			}
		}
	}
}

func TestNodes(t *testing.T) {
	for file, c := range configs(t) {
		var controlPlanes int
		type worker struct{ zone, rack string }
		var workers []worker
		for i, n := range c.Nodes {
			// kind's default node image is the one kind v0.33.0 publishes for
			// api/cluster's minor; another is chosen with KIND_NODE_IMAGE.
			if n.Image != kinddefaults.Image {
				t.Errorf("%s: node %d image %q, want kind v0.33.0's default image %q", file, i, n.Image, kinddefaults.Image)
			}
			if minor := kubeMinor(cluster.KubeVersion); !strings.Contains(n.Image, ":"+minor+".") || !strings.Contains(file, minor) {
				t.Errorf("%s: node %d image %q is not of Kubernetes %s (api/cluster.KubeVersion %s)", file, i, n.Image, minor, cluster.KubeVersion)
			}
			for k := range n.Labels {
				if strings.Contains(strings.SplitN(k, "/", 2)[0], "kubernetes.io") && !kubeletapis.IsKubeletLabel(k) {
					t.Errorf("%s: node %d label %q: the kubelet refuses to set it (--node-labels) and does not start", file, i, k)
				}
			}
			switch n.Role {
			case kindv1alpha4.ControlPlaneRole:
				controlPlanes++
			case kindv1alpha4.WorkerRole:
				zone, rack := n.Labels[kwoknodes.ZoneLabel], n.Labels[RackLabel]
				if zone == "" || rack == "" {
					t.Errorf("%s: worker %d needs labels %s and %s, has %v", file, i, kwoknodes.ZoneLabel, RackLabel, n.Labels)
					continue
				}
				if !strings.HasPrefix(rack, zone+"-rack-") {
					t.Errorf("%s: worker %d rack %q is not in zone %q (names as pkg/kwoknodes: zone-a-rack-0)", file, i, rack, zone)
				}
				workers = append(workers, worker{zone, rack})
			}
		}
		// The reference implementation runs without leader election as a
		// DaemonSet on the control plane: exactly one control-plane node.
		if controlPlanes != 1 {
			t.Errorf("%s: %d control-plane nodes, want 1", file, controlPlanes)
		}
		// make e2e-kind keeps the first DefaultWorkers workers. The
		// preemption specs need 3 schedulable nodes; the topology specs a
		// rack (and a zone) holding 2 of them; the zone specs 2 zones.
		if len(workers) < DefaultWorkers {
			t.Fatalf("%s: %d workers, want at least %d (make e2e-kind's default)", file, len(workers), DefaultWorkers)
		}
		first := workers[:DefaultWorkers]
		perRack, perZone := map[string]int{}, map[string]int{}
		for _, w := range first {
			perRack[w.rack]++
			perZone[w.zone]++
		}
		if slices.Max(slices.Collect(maps.Values(perRack))) < 2 || slices.Max(slices.Collect(maps.Values(perZone))) < 2 || len(perZone) < 2 {
			t.Errorf("%s: the first %d workers are in racks %v and zones %v; the topology specs need a rack and a zone of 2 nodes, and 2 zones", file, DefaultWorkers, perRack, perZone)
		}
	}
}

// kubeMinor is "v1.37" of "v1.37.2".
func kubeMinor(version string) string {
	parts := strings.SplitN(version, ".", 3)
	return strings.Join(parts[:min(2, len(parts))], ".")
}
