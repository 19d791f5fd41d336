package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// repoRoot is two directories up from this package.
var repoRoot = filepath.Join("..", "..")

func TestKubeVersionIsGoModsKubernetes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?k8s\.io/kubernetes\s+(v\S+)`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/kubernetes")
	}
	if got := string(m[1]); got != KubeVersion {
		t.Errorf("go.mod requires k8s.io/kubernetes %s but KubeVersion is %s: update api/cluster/versions.go", got, KubeVersion)
	}
}

func minor(t *testing.T, v string) int {
	t.Helper()
	m := regexp.MustCompile(`^v1\.(\d+)\.\d+$`).FindStringSubmatch(v)
	if m == nil {
		t.Fatalf("%q is not v1.MINOR.PATCH", v)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func TestSkewKubeVersionIsThePreviousMinor(t *testing.T) {
	if k, s := minor(t, KubeVersion), minor(t, SkewKubeVersion); s != k-1 {
		t.Errorf("SkewKubeVersion %s is not of the minor before KubeVersion %s", SkewKubeVersion, KubeVersion)
	}
}

// The Makefile and the hack scripts take their defaults from hack/versions.sh.
func TestHackVersionsPrintsTheTable(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	for arg, want := range map[string]string{"kube": KubeVersion, "skew": SkewKubeVersion} {
		out, err := exec.Command("bash", filepath.Join(repoRoot, "hack", "versions.sh"), arg).CombinedOutput()
		if err != nil {
			t.Fatalf("hack/versions.sh %s: %v\n%s", arg, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("hack/versions.sh %s = %q, want %q", arg, got, want)
		}
	}
}
