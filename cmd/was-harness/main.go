// Command was-harness manages the harness's local cluster for interactive use
// and summarises test output for people and CI.
//
//	was-harness cluster up     [--dir D] [--output-dir O] [--kube-version V] [--feature-gates A=true,B=false]
//	                           [--addon FILE] [--addon-bin-dir D] [--zones N] [--racks-per-zone N] [--nodes-per-rack N]
//	was-harness cluster down   [--dir D]
//	was-harness cluster status [--dir D]
//	was-harness cluster restart [--dir D] --component C [--feature-gates A=false] [--runtime-config g/v=false]
//	                           [--omit-feature-gates A,B] [--binary PATH] [--arg name=value]... [--reset]
//	was-harness cluster kill|restart-together|stop-node|start-node|compact-etcd [--dir D] [--component C[,C...]] [--node N]
//	                           (the faults of hack/fault-local.sh and hack/controller-restart-local.sh; fault.go)
//	was-harness conformance --check-only --kubeconfig K [--artifacts D]   (vendor-mode prerequisites; conformance.go)
//	was-harness kubeadm reconfigure|controllers|check|restore ...   (the vendor hooks for a kubeadm cluster; kubeadm.go)
//	was-harness webhook-client --dir D --mounted-at P --user U   (the API server's webhook client certificate with a CA of its own; pkg/webhookclient)
//	was-harness parity-report --out F [--baseline DIR] MODE=DIR...   (make parity's verdict and parity.md; pkg/parity)
//	was-harness test-summary FILE   (a `go test -json` stream: failures, then "N passed, N failed, N skipped")
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/workload-aware/apps-harness/api/cluster"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
	"github.com/workload-aware/apps-harness/pkg/webhookclient"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "was-harness: %v\n", err)
		os.Exit(1)
	}
}

func usage() error {
	return fmt.Errorf("usage: was-harness cluster up|down|status|restart|kill|restart-together|stop-node|start-node|compact-etcd [flags] | kubeadm VERB ... | webhook-client --dir D --mounted-at P --user U | parity-report --out F MODE=DIR... | test-summary FILE | flakes --out FILE JUNIT...")
}

func run(args []string) error {
	if len(args) == 0 {
		return usage()
	}
	switch args[0] {
	case "cluster":
		if len(args) < 2 {
			return usage()
		}
		return clusterCmd(args[1], args[2:])
	case "conformance":
		return conformanceCmd(args[1:])
	case "test-summary":
		if len(args) != 2 {
			return usage()
		}
		return testSummary(args[1], os.Stdout)
	case "flakes":
		return flakesCmd(args[1:])
	case "kubeadm":
		return kubeadmCmd(args[1:])
	case "webhook-client":
		return webhookClientCmd(args[1:])
	case "parity-report":
		return parityReportCmd(args[1:])
	}
	return usage()
}

func clusterCmd(verb string, args []string) error {
	fs := flag.NewFlagSet("cluster "+verb, flag.ContinueOnError)
	dir := fs.String("dir", "_output/cluster", "work directory of the cluster (PKI, kubeconfig, logs, state)")
	outputDir := fs.String("output-dir", "_output", "directory holding bin/ from hack/build-binaries.sh")
	kubeVersion := fs.String("kube-version", envOr("KUBE_VERSION", cluster.KubeVersion), "Kubernetes version of the binaries")
	addon := fs.String("addon", "controllers/config/localcluster-addon.yaml", "descriptor of the implementation to run as an add-on (binaries relative to <output-dir>/bin); empty runs none")
	addonBinDir := fs.String("addon-bin-dir", "", "directory the add-on's relative binaries are resolved against, instead of <output-dir>/bin (e.g. another build of the implementation)")
	gates := fs.String("feature-gates", "", "extra feature gates for apiserver, controller-manager and scheduler, e.g. CompositePodGroup=true")
	zones := fs.Int("zones", 0, "number of zones (0: default topology)")
	racks := fs.Int("racks-per-zone", 0, "racks per zone (0: default)")
	nodes := fs.Int("nodes-per-rack", 0, "nodes per rack (0: default)")
	timeout := fs.Duration("timeout", 60*time.Second, "readiness timeout of each component and of the nodes")
	component := fs.String("component", "", "restart: the component to restart (see `cluster status`)")
	runtimeConfig := fs.String("runtime-config", "", "restart: kube-apiserver runtime-config entries merged over the cluster's, e.g. scheduling.k8s.io/v1beta1=false")
	omitGates := fs.String("omit-feature-gates", "", "restart: gates left out of the component's --feature-gates (for an older binary), comma-separated")
	binary := fs.String("binary", "", "restart: run this binary instead (another Kubernetes version)")
	version := fs.String("version", "", "restart: run <output-dir>/bin/kube/<version>/<component> (hack/build-binaries.sh builds it), without the cluster's Workload-Aware Scheduling gates, which another version may not know: the vendor hook's <version>")
	reset := fs.Bool("reset", false, "restart: drop the component's earlier overrides first, back to the cluster's settings")
	componentArgs := extraArgs{}
	fs.Var(componentArgs, "arg", "restart: a flag of the component as name=value, without the leading --, merged over its current flags; repeatable (e.g. --arg controllers= idles the reference controller-manager)")
	node := fs.String("node", "", "stop-node, start-node: the node")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch verb {
	case "kill", "restart-together", "stop-node", "start-node", "compact-etcd":
		return clusterFaultCmd(verb, *dir, *component, *node)
	case "restart":
		if *version != "" {
			b, omit, err := versionBinary(*outputDir, *component, *version)
			if err != nil {
				return err
			}
			*binary, *omitGates = b, omit
		}
		return restartCmd(*dir, *component, *gates, *runtimeConfig, *omitGates, *binary, componentArgs, *reset)
	case "down":
		stopped, err := localcluster.StopWorkDir(*dir)
		if len(stopped) == 0 && err == nil {
			fmt.Printf("no running cluster recorded in %s\n", *dir)
		}
		for _, s := range stopped {
			fmt.Printf("stopped %s\n", s)
		}
		return err
	case "status":
		s, err := localcluster.Status(*dir)
		if err != nil {
			return err
		}
		fmt.Print(s)
		return nil
	case "up":
	default:
		return usage()
	}
	return clusterUp(upOptions{dir: *dir, outputDir: *outputDir, kubeVersion: *kubeVersion, addon: *addon, addonBinDir: *addonBinDir,
		gates: *gates, zones: *zones, racksPerZone: *racks, nodesPerRack: *nodes, timeout: *timeout})
}

// versionBinary is the binary of component at version that
// hack/build-binaries.sh builds, and the cluster's gates it must run without
// (they are this release's; the hook protocol gives another version only
// the gates named in the call).
func versionBinary(outputDir, component, version string) (binary, omitGates string, err error) {
	binary, err = filepath.Abs(filepath.Join(outputDir, "bin", "kube", version, component))
	if err != nil {
		return "", "", err
	}
	if _, err := os.Stat(binary); err != nil {
		return "", "", fmt.Errorf("--version %s: no %s: build it with `KUBE_VERSION=%s KUBE_BINARIES=%s hack/build-binaries.sh`", version, binary, version, component)
	}
	return binary, strings.Join(slices.Sorted(maps.Keys(cluster.KubeFeatureGates())), ","), nil
}

// restartCmd reconfigures one component of a running `cluster up` cluster:
// the step of a manual upgrade or downgrade (docs/upgrade-downgrade.md).
func restartCmd(dir, component, gates, runtimeConfig, omitGates, binary string, args map[string]string, reset bool) error {
	name := localcluster.Component(component)
	c, err := localcluster.Attach(dir, func(format string, args ...any) { fmt.Printf("[cluster] "+format+"\n", args...) })
	if err != nil {
		return err
	}
	if running := c.RunningComponents(); !slices.Contains(running, name) {
		return fmt.Errorf("--component %q: want one of %v", component, running)
	}
	change := map[string]bool{}
	if err := parseGates(gates, change); err != nil {
		return err
	}
	rc := map[string]string{}
	for _, kv := range strings.Split(runtimeConfig, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--runtime-config: %q is not group/version=true|false", kv)
		}
		rc[k] = v
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	update := localcluster.ComponentConfig{FeatureGates: change, RuntimeConfig: rc, Binary: binary, ExtraArgs: args}
	if omitGates != "" {
		update.OmitFeatureGates = strings.Split(omitGates, ",")
	}
	err = c.Restart(ctx, name, func(cc *localcluster.ComponentConfig) {
		if reset {
			*cc = localcluster.ComponentConfig{}
		}
		*cc = cc.Merge(update)
	})
	if err != nil {
		return err
	}
	fmt.Printf("restarted %s; its flags are the first line of %s\n", name, c.LogPath(name))
	return nil
}

// parseGates merges "A=true,B=false" into gates.
func parseGates(s string, gates map[string]bool) error {
	if s == "" {
		return nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		b, err := strconv.ParseBool(v)
		if !ok || k == "" || err != nil {
			return fmt.Errorf("--feature-gates: %q is not Name=true|false", kv)
		}
		gates[k] = b
	}
	return nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// upOptions are the flags of `cluster up`.
type upOptions struct {
	dir, outputDir, kubeVersion, addon, addonBinDir, gates string
	zones, racksPerZone, nodesPerRack                      int
	timeout                                                time.Duration
}

// clusterUp starts a detached local cluster, with the implementation add-on
// if one is named, and prints how to use and stop it.
func clusterUp(o upOptions) error {
	cfg := localcluster.DefaultConfig(o.outputDir, o.kubeVersion, o.dir)
	if o.addon != "" {
		binDir := o.addonBinDir
		if binDir == "" {
			binDir = filepath.Join(o.outputDir, "bin")
		}
		a, err := localcluster.LoadImplementation(o.addon, binDir)
		if err != nil {
			return err
		}
		cfg.Addons = append(cfg.Addons, a)
	}
	cfg.Detach = true
	cfg.ReadyTimeout = o.timeout
	cfg.Logf = func(format string, args ...any) { fmt.Printf("[cluster] "+format+"\n", args...) }
	if err := parseGates(o.gates, cfg.FeatureGates); err != nil {
		return err
	}
	for _, o := range []struct {
		v   int
		dst *int
	}{{o.zones, &cfg.Nodes.Zones}, {o.racksPerZone, &cfg.Nodes.RacksPerZone}, {o.nodesPerRack, &cfg.Nodes.NodesPerRack}} {
		if o.v > 0 {
			*o.dst = o.v
		}
	}
	c, err := localcluster.New(cfg)
	if err != nil {
		return err
	}
	// Ctrl-C during start-up stops what has started (Start cleans up on error).
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		return err
	}
	fmt.Printf("\nThe cluster runs in the background. Use it with:\n  export KUBECONFIG=%s\n  kubectl get nodes\nStop it with: make cluster-down (or was-harness cluster down --dir %s)\n", c.KubeconfigPath(), o.dir)
	return nil
}

// webhookClientCmd writes a new CA, the API server's webhook client
// certificate and the files that make a kube-apiserver present it (kind:
// hack/e2e-kind.sh mounts the directory into the control-plane node).
func webhookClientCmd(args []string) error {
	fs := flag.NewFlagSet("webhook-client", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory to write ca.crt, the kubeconfig and admission-config.yaml into")
	mountedAt := fs.String("mounted-at", "", "where kube-apiserver sees that directory (default: --dir)")
	user := fs.String("user", "*", "the webhooks to present the certificate to, as the API server names them: *, *.<namespace>.svc or <service>.<namespace>.svc")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("webhook-client: --dir is required")
	}
	if *mountedAt == "" {
		*mountedAt = *dir
	}
	return webhookclient.WriteWithNewCA(*dir, *mountedAt, *user)
}
