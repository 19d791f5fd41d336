package localcluster

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestAssembleArgsOverridesDefaultsInPlaceAndAppendsExtrasSorted(t *testing.T) {
	got := assembleArgs(
		[]arg{{"a", "1"}, {"b", "2"}},
		map[string]bool{"Zeta": false, "Alpha": true},
		map[string]string{"b": "override", "z": "26", "c": "3"},
	)
	want := []string{"--a=1", "--b=override", "--feature-gates=Alpha=true,Zeta=false", "--c=3", "--z=26"}
	if !slices.Equal(got, want) {
		t.Errorf("assembleArgs =\n %v\nwant\n %v", got, want)
	}
}

func TestAssembleArgsWithoutGatesHasNoFeatureGatesFlag(t *testing.T) {
	got := assembleArgs([]arg{{"a", "1"}}, nil, nil)
	if !slices.Equal(got, []string{"--a=1"}) {
		t.Errorf("got %v", got)
	}
}

func TestFormatRuntimeConfigIsSorted(t *testing.T) {
	got := FormatRuntimeConfig(map[string]string{"scheduling.k8s.io/v1beta1": "true", "resource.k8s.io/v1": "true"})
	if got != "resource.k8s.io/v1=true,scheduling.k8s.io/v1beta1=true" {
		t.Errorf("got %q", got)
	}
}

func TestEffectiveFeatureGatesMergeComponentOverClusterWide(t *testing.T) {
	cfg := DefaultConfig("/out", "v1.37.2", t.TempDir())
	cfg.Components[Scheduler] = ComponentConfig{FeatureGates: map[string]bool{"GenericWorkload": false, "PodGroupPreemptionPolicy": true}}
	s := cfg.EffectiveFeatureGates(Scheduler)
	if s["GenericWorkload"] || !s["PodGroupPreemptionPolicy"] || !s["TopologyAwareWorkloadScheduling"] {
		t.Errorf("scheduler gates = %v: want GenericWorkload off, PodGroupPreemptionPolicy on, the rest of the defaults kept", s)
	}
	if a := cfg.EffectiveFeatureGates(APIServer); !a["GenericWorkload"] || a["PodGroupPreemptionPolicy"] {
		t.Errorf("apiserver gates = %v: a scheduler override leaked", a)
	}
	if _, ok := cfg.FeatureGates["PodGroupPreemptionPolicy"]; ok {
		t.Error("EffectiveFeatureGates modified the cluster-wide map")
	}
	cfg.Addons = []Addon{testAddon()}
	if r := cfg.EffectiveFeatureGates("addon-ctl"); !r["AddonGate"] || !r["GenericWorkload"] {
		t.Errorf("add-on gates = %v: want its own gate on top of the cluster's", r)
	}
	if a := cfg.EffectiveFeatureGates(APIServer); a["AddonGate"] {
		t.Error("an add-on's gates leaked to kube-apiserver, which would refuse them")
	}
	if g := cfg.EffectiveFeatureGates("addon-hook"); g != nil {
		t.Errorf("an add-on component that takes no gates got %v", g)
	}
	if g := cfg.EffectiveFeatureGates(Etcd); g != nil {
		t.Errorf("etcd takes no Kubernetes gates, got %v", g)
	}
}

func TestDefaultsEnableWASOnTheComponentsThatNeedIt(t *testing.T) {
	c := testCluster(t)
	for _, name := range []Component{APIServer, ControllerManager, Scheduler} {
		args := argsOf(t, c, name)
		gates := flagValue(args, "feature-gates")
		for _, g := range []string{"GenericWorkload=true", "DRAWorkloadResourceClaims=true", "TopologyAwareWorkloadScheduling=true"} {
			if !strings.Contains(gates, g) {
				t.Errorf("%s --feature-gates=%q lacks %s", name, gates, g)
			}
		}
	}
	rc := flagValue(argsOf(t, c, APIServer), "runtime-config")
	for _, gv := range []string{"scheduling.k8s.io/v1beta1=true", "resource.k8s.io/v1=true"} {
		if !strings.Contains(rc, gv) {
			t.Errorf("apiserver --runtime-config=%q lacks %s", rc, gv)
		}
	}
	for _, name := range []Component{Etcd, Kwok} {
		if v := flagValue(argsOf(t, c, name), "feature-gates"); v != "" {
			t.Errorf("%s got Kubernetes feature gates %q", name, v)
		}
	}
}

// argsOf is componentArgs, failing the test on error.
func argsOf(t *testing.T, c *Cluster, name Component) []string {
	t.Helper()
	out, err := c.componentArgs(name)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestComponentArgsUseTheClusterPortsAndLoopback(t *testing.T) {
	c := testCluster(t)
	if v := flagValue(argsOf(t, c, APIServer), "secure-port"); v != "6443" {
		t.Errorf("apiserver secure-port %q", v)
	}
	if v := flagValue(argsOf(t, c, APIServer), "etcd-servers"); v != "http://127.0.0.1:2379" {
		t.Errorf("apiserver etcd-servers %q", v)
	}
	for _, name := range []Component{APIServer, ControllerManager, Scheduler} {
		if v := flagValue(argsOf(t, c, name), "bind-address"); v != "127.0.0.1" {
			t.Errorf("%s binds %q, want loopback only", name, v)
		}
	}
	if v := flagValue(argsOf(t, c, Kwok), "server-address"); v != "127.0.0.1:10250" {
		t.Errorf("kwok server-address %q", v)
	}
}

func TestExtraArgsReplaceHarnessDefaults(t *testing.T) {
	c := testCluster(t)
	c.cfg.Components[ControllerManager] = ComponentConfig{ExtraArgs: map[string]string{"controllers": "*,-deployment-controller", "v": "4"}}
	args := argsOf(t, c, ControllerManager)
	if v := flagValue(args, "controllers"); v != "*,-deployment-controller" {
		t.Errorf("controllers = %q", v)
	}
	if n := countFlag(args, "controllers"); n != 1 {
		t.Errorf("--controllers appears %d times", n)
	}
	if v := flagValue(args, "v"); v != "4" {
		t.Errorf("v = %q", v)
	}
}

// A component of another Kubernetes version must not see gates it does not
// know; the apiserver alone can stop serving a group version.
func TestPerComponentGateOmissionAndRuntimeConfig(t *testing.T) {
	c := testCluster(t)
	c.cfg.Components[Scheduler] = ComponentConfig{OmitFeatureGates: []string{"CompositePodGroup"}, FeatureGates: map[string]bool{"GenericWorkload": false}}
	c.cfg.Components[APIServer] = ComponentConfig{RuntimeConfig: map[string]string{"scheduling.k8s.io/v1beta1": "false"}}
	gates := flagValue(argsOf(t, c, Scheduler), "feature-gates")
	if strings.Contains(gates, "CompositePodGroup") || !strings.Contains(gates, "GenericWorkload=false") {
		t.Errorf("scheduler --feature-gates = %q, want CompositePodGroup omitted and GenericWorkload=false", gates)
	}
	if g := flagValue(argsOf(t, c, ControllerManager), "feature-gates"); !strings.Contains(g, "CompositePodGroup=true") {
		t.Errorf("the omission leaked to kube-controller-manager: %q", g)
	}
	rc := flagValue(argsOf(t, c, APIServer), "runtime-config")
	if !strings.Contains(rc, "scheduling.k8s.io/v1beta1=false") || !strings.Contains(rc, "resource.k8s.io/v1=true") {
		t.Errorf("apiserver --runtime-config = %q, want v1beta1=false merged over the defaults", rc)
	}
	cfg := DefaultConfig("/out", "v1.37.2", "/tmp/x")
	cfg.Components[Scheduler] = ComponentConfig{RuntimeConfig: map[string]string{"a/v1": "true"}}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "RuntimeConfig") {
		t.Errorf("Validate() = %v, want RuntimeConfig on the scheduler rejected", err)
	}
}

func TestValidateNamesTheFieldToFix(t *testing.T) {
	cases := map[string]struct {
		mutate func(*Config)
		want   string
	}{
		"no workdir":        {func(c *Config) { c.WorkDir = "" }, "WorkDir"},
		"unknown component": {func(c *Config) { c.Components["kubelet"] = ComponentConfig{} }, `Components["kubelet"]`},
		"gates via ExtraArgs": {func(c *Config) {
			c.Components[Scheduler] = ComponentConfig{ExtraArgs: map[string]string{"feature-gates": "A=true"}}
		}, "FeatureGates"},
		"runtime-config": {func(c *Config) {
			c.Components[APIServer] = ComponentConfig{ExtraArgs: map[string]string{"runtime-config": "x"}}
		}, "RuntimeConfig"},
		"gates on etcd": {func(c *Config) { c.Components[Etcd] = ComponentConfig{FeatureGates: map[string]bool{"A": true}} }, "takes no Kubernetes feature gates"},
		"bad topology":  {func(c *Config) { c.Nodes.NodesPerRack = 0 }, "Config.Nodes"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig("/out", "v1.37.2", "/tmp/x")
			tc.mutate(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

func TestFreePortsAreDistinctAndBindable(t *testing.T) {
	ports, err := FreePorts(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || p > 65535 {
			t.Errorf("port %d out of range", p)
		}
		if seen[p] {
			t.Errorf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}

func TestBinaryPathsFollowTheBuildLayout(t *testing.T) {
	c := testCluster(t)
	if got := c.binary(APIServer); got != "/out/bin/kube/v1.37.2/kube-apiserver" {
		t.Errorf("apiserver binary %s", got)
	}
	if got := c.binary(Etcd); got != "/out/bin/tools/etcd" {
		t.Errorf("etcd binary %s", got)
	}
	c.cfg.Components[Scheduler] = ComponentConfig{Binary: "/other/kube-scheduler"}
	if got := c.binary(Scheduler); got != "/other/kube-scheduler" {
		t.Errorf("override ignored: %s", got)
	}
}

func testCluster(t *testing.T) *Cluster {
	t.Helper()
	c, err := New(DefaultConfig("/out", "v1.37.2", t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	c.ports = ports{etcdClient: 2379, etcdPeer: 2380, apiserver: 6443, controllerManager: 10257, scheduler: 10259, kwok: 10250,
		addon: map[Component]int{}, addonServing: map[Component]int{}}
	c.advertiseAddress = "192.0.2.10"
	return c
}

func flagValue(args []string, key string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+key+"="); ok {
			return v
		}
	}
	return ""
}

func countFlag(args []string, key string) int {
	n := 0
	for _, a := range args {
		if strings.HasPrefix(a, "--"+key+"=") {
			n++
		}
	}
	return n
}

// `cluster restart` runs in another process than `cluster up`: Attach must
// rebuild the very command lines the cluster was started with.
func TestAttachRebuildsTheRecordedCluster(t *testing.T) {
	c := testClusterWithAddon(t)
	c.cfg.Components[Scheduler] = ComponentConfig{FeatureGates: map[string]bool{"GenericWorkload": false}}
	if err := os.MkdirAll(c.paths.root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := c.saveStateLocked(); err != nil {
		t.Fatal(err)
	}
	got, err := Attach(c.cfg.WorkDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.ports, c.ports) {
		t.Errorf("ports = %+v, want %+v", got.ports, c.ports)
	}
	for _, name := range c.components() {
		if a, b := strings.Join(argsOf(t, got, name), " "), strings.Join(argsOf(t, c, name), " "); a != b {
			t.Errorf("%s args differ after Attach:\n got %s\nwant %s", name, a, b)
		}
	}
	if !got.cfg.Detach {
		t.Error("an attached cluster must start components detached")
	}
	if _, err := Attach(t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "no cluster recorded") {
		t.Errorf("Attach(empty dir) = %v, want 'no cluster recorded'", err)
	}
}

// TestFreePortsAreReservedAcrossCalls: a port one call chose is not chosen
// again while reserved (two clusters starting at once in two processes),
// whatever the kernel offers; a reservation past its time is taken over.
func TestFreePortsAreReservedAcrossCalls(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	first, err := FreePorts(10)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range first {
		if reservePort(p) {
			t.Errorf("port %d reserved twice within %s", p, portReservation)
		}
	}
	second, err := FreePorts(10)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range second {
		if slices.Contains(first, p) {
			t.Errorf("port %d chosen by both calls", p)
		}
	}
	stale := time.Now().Add(-2 * portReservation)
	if err := os.Chtimes(filepath.Join(portReservations(), strconv.Itoa(first[0])), stale, stale); err != nil {
		t.Fatal(err)
	}
	if !reservePort(first[0]) {
		t.Errorf("a reservation older than %s was not taken over", portReservation)
	}
}
