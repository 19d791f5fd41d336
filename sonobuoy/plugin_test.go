// Package sonobuoy checks the Sonobuoy plugin definition and the suite
// image's entrypoint (run.sh), which are not Go.
package sonobuoy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// manifest is the part of Sonobuoy's plugin manifest (pkg/plugin/manifest)
// this plugin uses; decoding strictly catches misspelt keys.
type manifest struct {
	SonobuoyConfig struct {
		Driver       string `json:"driver"`
		PluginName   string `json:"plugin-name"`
		ResultFormat string `json:"result-format"`
		Description  string `json:"description"`
		SourceURL    string `json:"source-url"`
	} `json:"sonobuoy-config"`
	Spec corev1.Container `json:"spec"`
}

const resultsDir = "/tmp/sonobuoy/results" // where Sonobuoy's worker collects results

func TestPluginDefinition(t *testing.T) {
	data, err := os.ReadFile("plugin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		t.Fatalf("plugin.yaml: %v", err)
	}
	c := m.SonobuoyConfig
	if c.Driver != "Job" || c.ResultFormat != "junit" || c.PluginName == "" {
		t.Errorf("sonobuoy-config %+v: want driver Job, result-format junit and a plugin-name", c)
	}
	s := m.Spec
	if s.Image == "" || !slices.Equal(s.Command, []string{"/busybox/sh", "/run.sh"}) {
		t.Errorf("spec image %q command %v: want the suite image running /run.sh (build/e2e.Dockerfile)", s.Image, s.Command)
	}
	env := map[string]string{}
	for _, e := range s.Env {
		env[e.Name] = e.Value
	}
	if env["RESULTS_DIR"] != resultsDir || !slices.ContainsFunc(s.VolumeMounts, func(v corev1.VolumeMount) bool {
		return v.Name == "results" && v.MountPath == resultsDir
	}) {
		t.Errorf("RESULTS_DIR %q and volume mounts %v: run.sh must write into Sonobuoy's results volume at %s", env["RESULTS_DIR"], s.VolumeMounts, resultsDir)
	}
}

// fakeSuite records its arguments and writes a JUnit report where asked.
const fakeSuite = `#!/bin/sh
printf '%s\n' "$@" > "$ARGS_OUT"
for a in "$@"; do case $a in --ginkgo.junit-report=*) echo '<testsuites/>' > "${a#*=}" ;; esac; done
echo "Ran 1 of 1 Specs"
exit 1
`

func runEntrypoint(t *testing.T, host string) (dir string, out []byte, err error) {
	dir = t.TempDir()
	for _, d := range []string{"sa", "results", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "e2e.test"), []byte(fakeSuite), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "run.sh", "--extra-flag")
	cmd.Env = append(os.Environ(),
		"KUBERNETES_SERVICE_HOST="+host, "KUBERNETES_SERVICE_PORT=6443",
		"RESULTS_DIR="+filepath.Join(dir, "results"), "SA_DIR="+filepath.Join(dir, "sa"),
		"E2E_BINARY="+filepath.Join(dir, "e2e.test"), "TMPDIR="+filepath.Join(dir, "tmp"),
		"E2E_LABEL_FILTER=Harness && !Serial", "ARGS_OUT="+filepath.Join(dir, "args"))
	out, err = cmd.CombinedOutput()
	return dir, out, err
}

func TestEntrypointRunsTheSuiteInClusterAndHandsOverTheResults(t *testing.T) {
	dir, out, err := runEntrypoint(t, "10.96.0.1")
	if err != nil {
		t.Fatalf("run.sh: %v\n%s", err, out)
	}
	args, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "tmp", "was-e2e", "kubeconfig")
	for _, want := range []string{"--kubeconfig=" + kubeconfig, "--artifacts=" + filepath.Join(dir, "results"),
		"--ginkgo.junit-report=" + filepath.Join(dir, "results", "junit_e2e.xml"), "--ginkgo.label-filter=Harness && !Serial", "--extra-flag"} {
		if !slices.Contains(strings.Split(strings.TrimSpace(string(args)), "\n"), want) {
			t.Errorf("e2e.test arguments lack %q:\n%s", want, args)
		}
	}
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatalf("the generated kubeconfig: %v", err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || cfg.Clusters[ctx.Cluster].Server != "https://10.96.0.1:6443" || cfg.AuthInfos[ctx.AuthInfo].TokenFile != filepath.Join(dir, "sa", "token") ||
		cfg.Clusters[ctx.Cluster].CertificateAuthority != filepath.Join(dir, "sa", "ca.crt") {
		t.Errorf("kubeconfig does not use the in-cluster service account: %+v", cfg)
	}
	done, err := os.ReadFile(filepath.Join(dir, "results", "done"))
	if err != nil {
		t.Fatalf("Sonobuoy waits for the done file: %v", err)
	}
	list, err := exec.Command("tar", "-tzf", string(done)).CombinedOutput()
	if err != nil || !strings.Contains(string(list), "junit_e2e.xml") || !strings.Contains(string(list), "e2e.log") {
		t.Errorf("done names %s, which should be a tarball with junit_e2e.xml and e2e.log: %v\n%s", done, err, list)
	}
}

func TestEntrypointBracketsIPv6AndRefusesToRunOutsideAPod(t *testing.T) {
	dir, out, err := runEntrypoint(t, "fd00::1")
	if err != nil {
		t.Fatalf("run.sh: %v\n%s", err, out)
	}
	cfg, err := clientcmd.LoadFromFile(filepath.Join(dir, "tmp", "was-e2e", "kubeconfig"))
	if err != nil || cfg.Clusters["in-cluster"].Server != "https://[fd00::1]:6443" {
		t.Errorf("IPv6 server: %v %+v", err, cfg)
	}
	_, out, err = runEntrypoint(t, "")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "run me in a pod") {
		t.Errorf("without KUBERNETES_SERVICE_HOST: %v\n%s", err, out)
	}
}
