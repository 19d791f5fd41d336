package deploy

import (
	"os/exec"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// TestPinnedOverlay: hack/deploy-pinned.sh (what hack/e2e-kind.sh applies)
// renders deploy/ with both DaemonSets' image pinned by digest, and
// changes nothing else; deploy/ itself keeps its tag (TestControllerAndWebhookFlags).
func TestPinnedOverlay(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	dir := t.TempDir()
	out, err := exec.Command("bash", "../hack/deploy-pinned.sh", digest, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("deploy-pinned.sh: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != dir {
		t.Errorf("printed %q, want the overlay %q", got, dir)
	}
	pinned, err := RenderDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	base := rendered(t)
	if len(pinned) != len(base) {
		t.Fatalf("%d objects, deploy/ renders %d", len(pinned), len(base))
	}
	for _, name := range []string{"was-controller-manager", "was-webhook"} {
		c := into[appsv1.DaemonSet](t, pinned, "DaemonSet", Namespace, name).Spec.Template.Spec.Containers[0]
		if want := "localhost/was-controller-manager@" + digest; c.Image != want {
			t.Errorf("%s: image %q, want %q", name, c.Image, want)
		}
	}
	for _, bad := range []string{"sha256:123", "latest", ""} {
		if err := exec.Command("bash", "../hack/deploy-pinned.sh", bad, t.TempDir()).Run(); err == nil {
			t.Errorf("deploy-pinned.sh accepted the digest %q", bad)
		}
	}
}
