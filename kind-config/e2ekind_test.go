package kindconfig

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	kubeadmv1beta4 "k8s.io/kubernetes/cmd/kubeadm/app/apis/kubeadm/v1beta4"
	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// TestE2EKindFailsEarlyWithoutDockerOrKind runs hack/e2e-kind.sh with a PATH
// that holds only the few tools it needs before its checks, plus fakes of
// docker, and expects exit code 2 within seconds, with a message that says
// what is missing and how to get it. Without a running engine it would
// install one with apt-get as root: a PATH without apt-get (and without
// podman) leaves it nothing to use.
func TestE2EKindFailsEarlyWithoutDockerOrKind(t *testing.T) {
	for _, tc := range []struct {
		name   string
		docker string // fake docker script; empty: none
		goTool bool   // go on PATH
		want   string
	}{
		{"no go", "", false, "go not found in PATH"},
		{"no docker and no apt-get", "", true, "missing apt-get"},
		{"docker daemon down and no apt-get", "#!/bin/sh\nexit 1\n", true, "missing apt-get"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tools := []string{"bash", "dirname", "cat", "date"}
			if tc.goTool {
				tools = append(tools, "go")
			}
			bin := fakePath(t, tc.docker, tools...)
			cmd := exec.Command(filepath.Join(bin, "bash"), "../hack/e2e-kind.sh")
			cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir(), "ARTIFACTS=" + t.TempDir(), "OUTPUT_DIR=" + t.TempDir()}
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 2 {
				t.Fatalf("exit: %v, want exit code 2\n%s", err, out)
			}
			for _, want := range []string{tc.want, "sigs.k8s.io/kind@v0.33.0", "'make e2e' needs neither"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestContainerEngineCheck runs `hack/container-engine.sh check`, which
// .ci/run uses to decide whether the kind smoke runs: with no engine and
// nothing to install one with, it must fail, saying what is missing, and
// start nothing; with a (fake) running Docker it must succeed.
func TestContainerEngineCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		docker string // fake docker script; empty: none
		wantOK bool
		want   string
	}{
		{"no engine and no apt-get", "", false, "missing apt-get"},
		{"docker daemon down and no apt-get", "#!/bin/sh\nexit 1\n", false, "missing apt-get"},
		{"docker running", "#!/bin/sh\nexit 0\n", true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := fakePath(t, tc.docker, "bash", "dirname")
			cmd := exec.Command(filepath.Join(bin, "bash"), "../hack/container-engine.sh", "check")
			cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir(), "OUTPUT_DIR=" + t.TempDir()}
			out, err := cmd.CombinedOutput()
			if tc.wantOK {
				if err != nil {
					t.Fatalf("check failed with a running Docker: %v\n%s", err, out)
				}
				return
			}
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Fatalf("exit: %v, want exit code 1\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
		})
	}
}

// fakePath is a PATH directory holding only the given tools of this machine
// (the test skips when one is missing) and, unless docker is empty, a fake
// docker with that script.
func fakePath(t *testing.T, docker string, tools ...string) string {
	t.Helper()
	bin := t.TempDir()
	for _, tool := range tools {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s not on this machine", tool)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	if docker != "" {
		if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(docker), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return bin
}

// kindConfigOf runs hack/e2e-kind.sh's kind_config function (extracted from
// the script, so the test needs no engine) on was-v1.37.yaml with env set,
// and decodes its output strictly, as kind does.
func kindConfigOf(t *testing.T, env ...string) (*kindv1alpha4.Cluster, string) {
	t.Helper()
	script := `set -euo pipefail
source <(sed -n '/^AUDIT_NODE_DIR=/p; /^WEBHOOK_CLIENT_NODE_DIR=/p; /^kind_config() {/,/^}/p' ../hack/e2e-kind.sh)
kind_config`
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "KIND_CONFIG=was-v1.37.yaml", "KIND_WORKERS=3", "default_cni=",
		"SKEW_TAINT=was-harness.io/kubelet-skew", "KIND_SKEW_WORKER=", "KIND_NODE_IMAGE=", "KIND_SKEW_NODE_IMAGE=", "skew_kubelet=",
		"KIND_SKEW_KUBELET_GATES=", "KIND_AUDIT_DIR=", "WEBHOOK_CLIENT_DIR=" + webhookClientDir}, env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kind_config: %v\n%s", err, out)
	}
	c := &kindv1alpha4.Cluster{}
	if err := yaml.UnmarshalStrict(out, c); err != nil {
		t.Fatalf("kind_config's output is not a valid kind v1alpha4 Cluster: %v\n%s", err, out)
	}
	return c, string(out)
}

// TestKindConfigSkewWorker checks the kind configuration hack/e2e-kind.sh
// writes: by default the file's control plane and first 3 workers, images
// left to --image; with KIND_SKEW_WORKER=1 every node names its image (kind's
// --image would override the skew worker's) and one more worker follows, of
// the skew image, tainted at join, with its kubelet's --feature-gates.
func TestKindConfigSkewWorker(t *testing.T) {
	if _, err := exec.LookPath("awk"); err != nil {
		t.Skip("no awk")
	}
	def, text := kindConfigOf(t)
	if len(def.Nodes) != 1+DefaultWorkers {
		t.Fatalf("default: %d nodes, want 1 control plane and %d workers:\n%s", len(def.Nodes), DefaultWorkers, text)
	}
	for i, n := range def.Nodes {
		if n.Image != "" || len(n.KubeadmConfigPatches) > 0 {
			t.Errorf("default: node %d has image %q and patches %v; the default path leaves the image to --image and patches nothing per node", i, n.Image, n.KubeadmConfigPatches)
		}
	}

	const node, skew = "localhost/kind-node:v1.37.2", "localhost/kind-node:v1.36.3-worker"
	for _, gates := range []string{"DRAWorkloadResourceClaims=false,GenericWorkload=false", ""} {
		c, text := kindConfigOf(t, "KIND_SKEW_WORKER=1", "KIND_NODE_IMAGE="+node, "KIND_SKEW_NODE_IMAGE="+skew,
			"skew_kubelet=v1.36.3", "KIND_SKEW_KUBELET_GATES="+gates)
		if len(c.Nodes) != 2+DefaultWorkers {
			t.Fatalf("skew (gates %q): %d nodes, want 1 control plane, %d workers and the skew worker:\n%s", gates, len(c.Nodes), DefaultWorkers, text)
		}
		for i, n := range c.Nodes[:len(c.Nodes)-1] {
			if n.Image != node {
				t.Errorf("skew: node %d image %q, want %q", i, n.Image, node)
			}
		}
		w := c.Nodes[len(c.Nodes)-1]
		if w.Role != kindv1alpha4.WorkerRole || w.Image != skew {
			t.Fatalf("skew: last node %s %q, want a worker of %q:\n%s", w.Role, w.Image, skew, text)
		}
		if len(w.Labels) > 0 {
			t.Errorf("skew worker labels %v: without zone and rack it stays out of the topology specs' domains", w.Labels)
		}
		if len(w.KubeadmConfigPatches) != 1 {
			t.Fatalf("skew worker: %d kubeadm patches, want its JoinConfiguration's taint:\n%s", len(w.KubeadmConfigPatches), text)
		}
		jc := &kubeadmv1beta4.JoinConfiguration{}
		if err := yaml.UnmarshalStrict([]byte(w.KubeadmConfigPatches[0]), jc); err != nil {
			t.Fatalf("skew worker patch is no kubeadm v1beta4 JoinConfiguration: %v", err)
		}
		if jc.Kind != "JoinConfiguration" || jc.APIVersion != "kubeadm.k8s.io/v1beta4" || len(jc.NodeRegistration.Taints) != 1 {
			t.Fatalf("skew worker patch: %+v", jc)
		}
		if tt := jc.NodeRegistration.Taints[0]; tt.Key != "was-harness.io/kubelet-skew" || tt.Value != "v1.36.3" || tt.Effect != corev1.TaintEffectNoSchedule {
			t.Errorf("skew worker taint %v, want was-harness.io/kubelet-skew=v1.36.3:NoSchedule", tt)
		}
		if gates == "" {
			if len(w.KubeadmConfigPatchesJSON6902) != 0 {
				t.Errorf("KIND_SKEW_KUBELET_GATES empty: the skew kubelet keeps the cluster's gates, yet patches %v", w.KubeadmConfigPatchesJSON6902)
			}
			continue
		}
		if len(w.KubeadmConfigPatchesJSON6902) != 1 {
			t.Fatalf("skew worker: %d JSON 6902 patches, want the kubelet's --feature-gates:\n%s", len(w.KubeadmConfigPatchesJSON6902), text)
		}
		p := w.KubeadmConfigPatchesJSON6902[0]
		if p.Group != "kubeadm.k8s.io" || p.Version != "v1beta4" || p.Kind != "JoinConfiguration" {
			t.Errorf("JSON 6902 patch targets %s/%s %s, want kubeadm.k8s.io/v1beta4 JoinConfiguration", p.Group, p.Version, p.Kind)
		}
		// Applied to a JoinConfiguration of kind's v1beta4 template (its
		// kubeletExtraArgs), the patch appends the kubelet flag.
		joined := applyJSON6902(t, `{"apiVersion":"kubeadm.k8s.io/v1beta4","kind":"JoinConfiguration","nodeRegistration":{"kubeletExtraArgs":[{"name":"node-ip","value":"172.18.0.5"}]}}`, p.Patch)
		got := &kubeadmv1beta4.JoinConfiguration{}
		if err := yaml.UnmarshalStrict(joined, got); err != nil {
			t.Fatalf("patched JoinConfiguration: %v\n%s", err, joined)
		}
		if a := args(got.NodeRegistration.KubeletExtraArgs); a["node-ip"] != "172.18.0.5" || a["feature-gates"] != gates {
			t.Errorf("patched kubeletExtraArgs %v, want node-ip kept and feature-gates=%s", a, gates)
		}
	}
}

func applyJSON6902(t *testing.T, doc, patchYAML string) []byte {
	t.Helper()
	pj, err := yaml.YAMLToJSON([]byte(patchYAML))
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(pj)
	if err != nil {
		t.Fatalf("JSON 6902 patch %s: %v", patchYAML, err)
	}
	out, err := p.Apply([]byte(doc))
	if err != nil {
		t.Fatalf("applying %s: %v", patchYAML, err)
	}
	return out
}

// webhookClientDir is the WEBHOOK_CLIENT_DIR the kind_config tests give.
const webhookClientDir = "/tmp/out/kind-was-e2e-webhook-client"

// TestKindConfigAPIServerPatch checks the second ClusterConfiguration patch
// hack/e2e-kind.sh gives kind's kube-apiserver (kind merges v1beta4
// extraArgs by name, keeping the first patch's gates):
//   - always, its webhook client certificate: the control-plane node (only)
//     mounts WEBHOOK_CLIENT_DIR read-only, and kube-apiserver reads the
//     AdmissionConfiguration there, through a read-only hostPath volume;
//   - with KIND_AUDIT_DIR, the audit log: that directory of this machine,
//     read-write, the policy and log there. Without it, nothing of the kind.
func TestKindConfigAPIServerPatch(t *testing.T) {
	if _, err := exec.LookPath("awk"); err != nil {
		t.Skip("no awk")
	}
	const auditDir = "/tmp/with space/kind-audit"
	for _, withAudit := range []bool{false, true} {
		var env []string
		if withAudit {
			env = append(env, "KIND_AUDIT_DIR="+auditDir)
		}
		c, text := kindConfigOf(t, env...)
		mounts := map[string]string{} // node path: host path
		for i, n := range c.Nodes {
			if n.Role != kindv1alpha4.ControlPlaneRole {
				if len(n.ExtraMounts) > 0 {
					t.Errorf("worker %d mounts %v; only kube-apiserver's node needs them", i, n.ExtraMounts)
				}
				continue
			}
			for _, m := range n.ExtraMounts {
				if m.Readonly != (m.HostPath == webhookClientDir) {
					t.Errorf("control plane mount %+v: want the webhook client directory read-only, the audit directory read-write", m)
				}
				mounts[m.ContainerPath] = m.HostPath
			}
		}
		patch := apiServerPatch(t, c)
		if patch == nil {
			t.Fatalf("no ClusterConfiguration patch sets kube-apiserver's admission-control-config-file:\n%s", text)
		}
		want := map[string]string{}
		for nodeDir, hostDir := range mounts {
			switch hostDir {
			case webhookClientDir:
				want["admission-control-config-file"] = nodeDir + "/admission-config.yaml"
			case auditDir:
				want["audit-policy-file"], want["audit-log-path"] = nodeDir+"/policy.yaml", nodeDir+"/audit.log"
			default:
				t.Errorf("control plane mounts %s at %s, which nothing uses", hostDir, nodeDir)
			}
		}
		if _, ok := want["audit-log-path"]; ok != withAudit {
			t.Errorf("KIND_AUDIT_DIR set: %v, audit directory mounted: %v:\n%s", withAudit, ok, text)
		}
		if got := args(patch.APIServer.ExtraArgs); !maps.Equal(got, want) {
			t.Errorf("kube-apiserver extraArgs %v, want only %v", got, want)
		}
		if v := patch.APIServer.ExtraVolumes; len(v) != len(mounts) {
			t.Errorf("kube-apiserver extraVolumes %+v, want one per mounted directory %v", v, mounts)
		}
		for _, v := range patch.APIServer.ExtraVolumes {
			if host, ok := mounts[v.HostPath]; !ok || v.MountPath != v.HostPath || v.ReadOnly != (host == webhookClientDir) {
				t.Errorf("kube-apiserver volume %+v: want a mounted node directory at the same path, read-only for the webhook client", v)
			}
		}
		if patch.ControllerManager.ExtraArgs != nil || patch.Scheduler.ExtraArgs != nil {
			t.Errorf("the patch changes more than kube-apiserver: %+v", patch)
		}
	}
}

// apiServerPatch is the ClusterConfiguration patch that sets
// kube-apiserver's admission-control-config-file, decoded strictly; nil
// when there is none.
func apiServerPatch(t *testing.T, c *kindv1alpha4.Cluster) *kubeadmv1beta4.ClusterConfiguration {
	t.Helper()
	for _, p := range c.KubeadmConfigPatches {
		cc := &kubeadmv1beta4.ClusterConfiguration{}
		if err := yaml.Unmarshal([]byte(p), cc); err != nil || cc.Kind != "ClusterConfiguration" {
			continue
		}
		if _, ok := args(cc.APIServer.ExtraArgs)["admission-control-config-file"]; !ok {
			continue
		}
		if err := yaml.UnmarshalStrict([]byte(p), &kubeadmv1beta4.ClusterConfiguration{}); err != nil {
			t.Fatalf("the kube-apiserver patch is no strict kubeadm v1beta4 ClusterConfiguration: %v\n%s", err, p)
		}
		return cc
	}
	return nil
}

// TestAuditPolicyIsTheLocalClusters: kind's kube-apiserver audits what the
// local cluster's does, so a spec reads either log the same way.
func TestAuditPolicyIsTheLocalClusters(t *testing.T) {
	data, err := os.ReadFile("audit-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != localcluster.DefaultAuditPolicy {
		t.Errorf("audit-policy.yaml differs from pkg/localcluster's DefaultAuditPolicy:\n%s\nwant:\n%s", data, localcluster.DefaultAuditPolicy)
	}
}
