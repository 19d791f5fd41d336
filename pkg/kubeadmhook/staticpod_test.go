package kubeadmhook

import (
	"slices"
	"testing"
)

// kube-apiserver's static pod as kubeadm writes it on kind with
// hack/e2e-kind.sh's audit log (trimmed): a rewrite for a gate keeps the
// audit flags and the hostPath volume they write to, so specs still read
// the log through an apiserver restart.
const auditedAPIServer = `apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - command:
    - kube-apiserver
    - --audit-log-path=/var/lib/was-harness/audit/audit.log
    - --audit-policy-file=/var/lib/was-harness/audit/policy.yaml
    - --feature-gates=GenericWorkload=true
    image: registry.k8s.io/kube-apiserver:v1.37.0
    name: kube-apiserver
    volumeMounts:
    - mountPath: /var/lib/was-harness/audit
      name: was-audit
  volumes:
  - hostPath:
      path: /var/lib/was-harness/audit
      type: Directory
    name: was-audit
`

func TestRenderManifestKeepsTheAuditLog(t *testing.T) {
	out, err := renderManifest([]byte(auditedAPIServer), Change{FeatureGates: map[string]bool{"GenericWorkload": false}})
	if err != nil {
		t.Fatal(err)
	}
	pod, err := decodePod(out)
	if err != nil {
		t.Fatal(err)
	}
	cmd := pod.Spec.Containers[0].Command
	for _, want := range []string{"--audit-log-path=/var/lib/was-harness/audit/audit.log", "--audit-policy-file=/var/lib/was-harness/audit/policy.yaml", "--feature-gates=GenericWorkload=false"} {
		if !slices.Contains(cmd, want) {
			t.Errorf("rewritten command %v lacks %s", cmd, want)
		}
	}
	if m := pod.Spec.Containers[0].VolumeMounts; len(m) != 1 || m[0].Name != "was-audit" || m[0].MountPath != "/var/lib/was-harness/audit" {
		t.Errorf("rewritten volumeMounts %+v, want the audit directory's", m)
	}
	if v := pod.Spec.Volumes; len(v) != 1 || v[0].HostPath == nil || v[0].HostPath.Path != "/var/lib/was-harness/audit" {
		t.Errorf("rewritten volumes %+v, want the audit directory's hostPath", v)
	}
}
