package localcluster

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/workload-aware/apps-harness/api/cluster"
)

// testAddon has a webhook process (no gates) and a controller process (with
// a gate of its own) that replaces a kube-controller-manager controller.
func testAddon() Addon {
	return Addon{
		Name:                "test",
		FeatureGates:        map[string]bool{"AddonGate": true},
		ReplacesControllers: []string{"deployment-controller"},
		Components: []AddonComponent{
			{Name: "addon-hook", Binary: "/bin/addon", User: "addon", HealthPath: "/healthz", Serves: "ns/hook",
				Args: []string{"--kubeconfig=$(KUBECONFIG)", "--bind=127.0.0.1:$(PORT)", "--serve=127.0.0.1:$(SERVING_PORT)",
					"--cert=$(TLS_CERT_FILE)", "--key=$(TLS_PRIVATE_KEY_FILE)", "--controllers="}},
			{Name: "addon-ctl", Binary: "/bin/addon", User: "addon", HealthPath: "/healthz", MetricsPath: "/metrics", TakesFeatureGates: true,
				Args: []string{"--kubeconfig=$(KUBECONFIG)", "--bind=127.0.0.1:$(PORT)", "--v=2"}},
		},
		Manifests: []Manifest{{File: "hook.yaml", After: "addon-hook", Content: `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: hook}
webhooks:
- name: a.example.com
  clientConfig:
    service: {namespace: ns, name: hook, path: /validate, port: 443}
- name: b.example.com
  clientConfig: {url: "https://example.com/validate"}
`}},
	}
}

func testClusterWithAddon(t *testing.T) *Cluster {
	t.Helper()
	cfg := DefaultConfig("/out", "v1.37.2", t.TempDir())
	cfg.Addons = []Addon{testAddon()}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.ports = ports{etcdClient: 2379, etcdPeer: 2380, apiserver: 6443, controllerManager: 10257, scheduler: 10259, kwok: 10250,
		addon: map[Component]int{"addon-hook": 10290, "addon-ctl": 10292}, addonServing: map[Component]int{"addon-hook": 10291}}
	c.advertiseAddress = "192.0.2.10"
	return c
}

func TestAddonComponentsStartAfterTheControlPlaneWithTheirOwnFlags(t *testing.T) {
	c := testClusterWithAddon(t)
	if got, want := c.components(), append(slices.Clone(CoreComponents), "addon-hook", "addon-ctl"); !slices.Equal(got, want) {
		t.Errorf("components %v, want %v", got, want)
	}
	hook := argsOf(t, c, "addon-hook")
	want := []string{"--kubeconfig=" + c.paths.kubeconfig("addon-hook"), "--bind=127.0.0.1:10290", "--serve=127.0.0.1:10291",
		"--cert=" + c.paths.crt("addon-hook-serving"), "--key=" + c.paths.key("addon-hook-serving"), "--controllers="}
	if !slices.Equal(hook, want) {
		t.Errorf("addon-hook args\n %v\nwant\n %v", hook, want)
	}
	ctl := argsOf(t, c, "addon-ctl")
	if g := flagValue(ctl, "feature-gates"); !strings.Contains(g, "AddonGate=true") || !strings.Contains(g, "GenericWorkload=true") {
		t.Errorf("addon-ctl --feature-gates=%q: want the cluster's gates and the add-on's", g)
	}
	if v := flagValue(argsOf(t, c, ControllerManager), "controllers"); v != "*,-deployment-controller" {
		t.Errorf("kube-controller-manager --controllers=%q: the add-on replaces deployment-controller", v)
	}
	if url, err := c.MetricsURL("addon-ctl"); err != nil || url != "http://127.0.0.1:10292/metrics" {
		t.Errorf("MetricsURL(addon-ctl) = %q, %v", url, err)
	}
	if _, err := c.MetricsURL("addon-hook"); err == nil {
		t.Error("MetricsURL of a component without metricsPath succeeded")
	}
	if c.binary("addon-ctl") != "/bin/addon" {
		t.Errorf("binary %s", c.binary("addon-ctl"))
	}
	c.cfg.Components["addon-ctl"] = ComponentConfig{ExtraArgs: map[string]string{"v": "4", "crash-after": "x"}}
	ctl = argsOf(t, c, "addon-ctl")
	if flagValue(ctl, "v") != "4" || countFlag(ctl, "v") != 1 || flagValue(ctl, "crash-after") != "x" {
		t.Errorf("ExtraArgs must replace an add-on flag by name and append new ones: %v", ctl)
	}
}

func TestWithoutAddonKubeControllerManagerRunsEveryController(t *testing.T) {
	if v := flagValue(argsOf(t, testCluster(t), ControllerManager), "controllers"); v != "*" {
		t.Errorf("--controllers=%q, want *", v)
	}
}

func TestWebhooksCallingAServedServiceArePointedAtTheComponent(t *testing.T) {
	c := testClusterWithAddon(t)
	if err := os.MkdirAll(c.paths.pki, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.paths.crt("ca"), []byte("CA PEM"), 0o600); err != nil {
		t.Fatal(err)
	}
	objs, err := decodeManifest(c.cfg.Addons[0].Manifests[0].Content)
	if err != nil || len(objs) != 1 {
		t.Fatalf("decodeManifest: %d objects, %v", len(objs), err)
	}
	if err := c.routeWebhooks(objs[0]); err != nil {
		t.Fatal(err)
	}
	hooks, _, _ := unstructured.NestedSlice(objs[0].Object, "webhooks")
	cc := hooks[0].(map[string]any)["clientConfig"].(map[string]any)
	if cc["url"] != "https://127.0.0.1:10291/validate" || cc["caBundle"] != base64.StdEncoding.EncodeToString([]byte("CA PEM")) || cc["service"] != nil {
		t.Errorf("routed clientConfig %v", cc)
	}
	if url := hooks[1].(map[string]any)["clientConfig"].(map[string]any)["url"]; url != "https://example.com/validate" {
		t.Errorf("a URL webhook was changed: %v", url)
	}
	unserved, _ := decodeManifest(strings.ReplaceAll(c.cfg.Addons[0].Manifests[0].Content, "name: hook, path", "name: other, path"))
	if err := c.routeWebhooks(unserved[0]); err == nil || !strings.Contains(err.Error(), "ns/other") {
		t.Errorf("a webhook calling a Service nobody serves: %v, want an error naming it", err)
	}
}

func TestAddonValidationNamesTheMistake(t *testing.T) {
	cases := map[string]struct {
		mutate func(*Addon)
		want   string
	}{
		"core name":        {func(a *Addon) { a.Components[0].Name = Scheduler }, "unique"},
		"duplicate name":   {func(a *Addon) { a.Components[1].Name = a.Components[0].Name }, "unique"},
		"no user":          {func(a *Addon) { a.Components[0].User = "" }, "no user"},
		"unknown variable": {func(a *Addon) { a.Components[1].Args = append(a.Components[1].Args, "--x=$(NOPE)") }, "$(NOPE)"},
		"serving port without serves": {func(a *Addon) {
			a.Components[1].Args = append(a.Components[1].Args, "--x=$(SERVING_PORT)")
		}, "$(SERVING_PORT)"},
		"not a flag":    {func(a *Addon) { a.Components[1].Args = []string{"positional"} }, "--name=value"},
		"after nothing": {func(a *Addon) { a.Manifests[0].After = "nobody" }, `after "nobody"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig("/out", "v1.37.2", "/tmp/x")
			a := testAddon()
			a.Components = slices.Clone(a.Components)
			tc.mutate(&a)
			cfg.Addons = []Addon{a}
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// The reference implementation's descriptor is read as a file, as the
// harness reads it: no code of the reference is linked.
func TestTheReferenceDescriptorLoads(t *testing.T) {
	a, err := LoadImplementation(filepath.Join("..", "..", "controllers", "config", "localcluster-addon.yaml"), "/out/bin")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Components) != 2 || a.Components[0].Binary != "/out/bin/was-controller-manager" {
		t.Errorf("components %+v", a.Components)
	}
	if !slices.Equal(a.ReplacesControllers, cluster.ReplacedKubeControllers) {
		t.Errorf("replaces %v, want api/cluster's %v", a.ReplacesControllers, cluster.ReplacedKubeControllers)
	}
	for g := range cluster.ImplementationFeatureGates() {
		if !a.FeatureGates[g] {
			t.Errorf("the implementation's gate %s is not on", g)
		}
	}
	for _, m := range a.Manifests {
		objs, err := decodeManifest(m.Content)
		if err != nil || len(objs) == 0 {
			t.Errorf("%s: %d objects, %v", m.File, len(objs), err)
		}
	}
	cfg := DefaultConfig("/out", "v1.37.2", t.TempDir())
	cfg.Addons = []Addon{a}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
}

// The webhook's serving certificate and its client certificate are two
// files: the apiserver must find 127.0.0.1 in the one the webhook serves.
func TestAddonServingAndClientCertificatesAreApart(t *testing.T) {
	c := testClusterWithAddon(t)
	if err := os.MkdirAll(c.paths.pki, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := c.writePKI(); err != nil {
		t.Fatal(err)
	}
	certFile := flagValue(argsOf(t, c, "addon-hook"), "cert")
	data, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if len(cert.IPAddresses) != 1 || !cert.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) || !slices.Contains(cert.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		t.Errorf("%s: IPs %v, usages %v; want a serving certificate for 127.0.0.1", certFile, cert.IPAddresses, cert.ExtKeyUsage)
	}
	kc, err := clientcmd.LoadFromFile(c.paths.kubeconfig("addon-hook"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := kc.AuthInfos["addon"]; !ok {
		t.Errorf("addon-hook's kubeconfig users %v, want its User %q", slices.Collect(maps.Keys(kc.AuthInfos)), "addon")
	}
}

// SecureURL must name the port kube-scheduler and kube-controller-manager are
// started with (--secure-port), where the suite reads their /metrics.
func TestSecureURLIsTheSecurePortOfTheirFlags(t *testing.T) {
	c := testClusterWithAddon(t)
	for _, name := range []Component{Scheduler, ControllerManager} {
		url, err := c.SecureURL(name)
		if want := "https://127.0.0.1:" + flagValue(argsOf(t, c, name), "secure-port"); err != nil || url != want {
			t.Errorf("SecureURL(%s) = %q, %v; want %q", name, url, err, want)
		}
	}
	if _, err := c.SecureURL(APIServer); err == nil {
		t.Error("SecureURL(kube-apiserver) succeeded: only kube-controller-manager and kube-scheduler serve there")
	}
}

// Status names each component's port: a vendor-mode run on a `make
// cluster-up` cluster gives the suite kube-scheduler's metrics URL from it.
func TestStatusNamesEachComponentsPort(t *testing.T) {
	dir := t.TempDir()
	st := state{Kubeconfig: "kc", Ports: map[Component]int{Scheduler: 10259},
		Components: []stateComponent{{Name: Scheduler, PID: 0, Log: "s.log"}, {Name: Etcd, Log: "e.log"}}}
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(newPaths(dir).state(), data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := Status(dir)
	if err != nil || !strings.Contains(out, "port 10259") || !strings.Contains(out, "port -") {
		t.Errorf("Status() = %q, %v; want kube-scheduler's port 10259 and etcd's unknown", out, err)
	}
}
