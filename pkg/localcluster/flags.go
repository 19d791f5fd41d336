package localcluster

import (
	"github.com/workload-aware/apps-harness/pkg/kwoknodes"

	"fmt"
	"maps"
	"slices"
	"strings"
)

// arg is one --key=value flag. Flags are kept as an ordered list so that the
// command lines in logs are stable and readable.
type arg struct{ key, value string }

// assembleArgs renders defaults, then the feature gates, then applies extra
// (overriding a default of the same key, appending the rest in sorted order).
func assembleArgs(defaults []arg, gates map[string]bool, extra map[string]string) []string {
	args := slices.Clone(defaults)
	if len(gates) > 0 {
		args = append(args, arg{"feature-gates", FormatFeatureGates(gates)})
	}
	seen := map[string]bool{}
	for i, a := range args {
		if v, ok := extra[a.key]; ok {
			args[i].value = v
			seen[a.key] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if !seen[k] {
			args = append(args, arg{k, extra[k]})
		}
	}
	out := make([]string, 0, len(args))
	for _, a := range args {
		out = append(out, fmt.Sprintf("--%s=%s", a.key, a.value))
	}
	return out
}

// FormatFeatureGates renders gates as the --feature-gates value, sorted by name.
func FormatFeatureGates(gates map[string]bool) string {
	parts := make([]string, 0, len(gates))
	for _, k := range slices.Sorted(maps.Keys(gates)) {
		parts = append(parts, fmt.Sprintf("%s=%t", k, gates[k]))
	}
	return strings.Join(parts, ",")
}

// FormatRuntimeConfig renders the --runtime-config value, sorted by group/version.
func FormatRuntimeConfig(rc map[string]string) string {
	parts := make([]string, 0, len(rc))
	for _, k := range slices.Sorted(maps.Keys(rc)) {
		parts = append(parts, k+"="+rc[k])
	}
	return strings.Join(parts, ",")
}

// EffectiveFeatureGates merges the cluster-wide gates with a component's own.
func (c *Config) EffectiveFeatureGates(name Component) map[string]bool {
	if !name.TakesKubeFeatureGates() {
		return nil
	}
	gates := maps.Clone(c.FeatureGates)
	if gates == nil {
		gates = map[string]bool{}
	}
	if name.IsReference() {
		maps.Copy(gates, c.Reference.FeatureGates)
	}
	maps.Copy(gates, c.Components[name].FeatureGates)
	for _, g := range c.Components[name].OmitFeatureGates {
		delete(gates, g)
	}
	return gates
}

// EffectiveRuntimeConfig merges the cluster-wide runtime-config with the
// kube-apiserver's own.
func (c *Config) EffectiveRuntimeConfig() map[string]string {
	rc := maps.Clone(c.RuntimeConfig)
	if rc == nil {
		rc = map[string]string{}
	}
	maps.Copy(rc, c.Components[APIServer].RuntimeConfig)
	return rc
}

// componentArgs returns the full command line (without the binary) of a component.
func (c *Cluster) componentArgs(name Component) []string {
	p, cfg := c.paths, &c.cfg
	local := "127.0.0.1"
	var defaults []arg
	switch name {
	case Etcd:
		client := fmt.Sprintf("http://%s:%d", local, c.ports.etcdClient)
		peer := fmt.Sprintf("http://%s:%d", local, c.ports.etcdPeer)
		defaults = []arg{
			{"name", "etcd0"},
			{"data-dir", p.etcdData},
			{"listen-client-urls", client},
			{"advertise-client-urls", client},
			{"listen-peer-urls", peer},
			{"initial-advertise-peer-urls", peer},
			{"initial-cluster", "etcd0=" + peer},
			// Test data need not survive a power cut; this makes etcd much faster.
			{"unsafe-no-fsync", "true"},
			{"quota-backend-bytes", fmt.Sprint(4 << 30)},
			{"log-level", "warn"},
		}
	case APIServer:
		defaults = []arg{
			{"etcd-servers", fmt.Sprintf("http://%s:%d", local, c.ports.etcdClient)},
			{"bind-address", local},
			{"secure-port", fmt.Sprint(c.ports.apiserver)},
			{"advertise-address", c.advertiseAddress},
			// No endpoints reconciler: the kubernetes Service is not needed and the
			// advertise address must not be written into a shared network.
			{"endpoint-reconciler-type", "none"},
			{"cert-dir", p.certDir(APIServer)},
			{"tls-cert-file", p.crt("apiserver")},
			{"tls-private-key-file", p.key("apiserver")},
			{"client-ca-file", p.crt("ca")},
			{"kubelet-client-certificate", p.crt("apiserver-kubelet-client")},
			{"kubelet-client-key", p.key("apiserver-kubelet-client")},
			{"service-account-issuer", "https://kubernetes.default.svc.cluster.local"},
			{"service-account-key-file", p.saPub},
			{"service-account-signing-key-file", p.saKey},
			{"service-cluster-ip-range", "10.96.0.0/16"},
			{"authorization-mode", "Node,RBAC"},
			{"allow-privileged", "true"},
			{"runtime-config", FormatRuntimeConfig(cfg.EffectiveRuntimeConfig())},
			// Writes to Workloads and PodGroups are audited with their user, so
			// benchmarks can attribute every write to the component that made it.
			{"audit-policy-file", p.auditPolicy},
			{"audit-log-path", p.auditLog()},
		}
	case ControllerManager, Scheduler:
		kc := p.kubeconfig(name)
		defaults = []arg{
			{"kubeconfig", kc},
			{"authentication-kubeconfig", kc},
			{"authorization-kubeconfig", kc},
			{"bind-address", local},
			{"secure-port", fmt.Sprint(c.ports.of(name))},
			{"cert-dir", p.certDir(name)},
			{"leader-elect", "false"},
		}
		if name == ControllerManager {
			defaults = append(defaults,
				arg{"service-account-private-key-file", p.saKey},
				arg{"root-ca-file", p.crt("ca")},
				arg{"cluster-signing-cert-file", p.crt("ca")},
				arg{"cluster-signing-key-file", p.key("ca")},
				arg{"use-service-account-credentials", "true"},
				arg{"controllers", c.kcmControllers()},
				// Node health is checked every second rather than every five, so
				// new kwok nodes lose their not-ready taint within a second.
				arg{"node-monitor-period", "1s"},
			)
		}
	case WASWebhook, WASControllerManager:
		defaults = []arg{
			{"kubeconfig", p.kubeconfig(WASControllerManager)},
			{"bind-address", fmt.Sprintf("%s:%d", local, c.ports.of(name))},
			{"v", "2"},
		}
		if name == WASWebhook {
			defaults = append(defaults,
				arg{"controllers", ""},
				arg{"webhook-bind-address", fmt.Sprintf("%s:%d", local, c.ports.wasWebhookServing)},
				arg{"tls-cert-file", p.crt(string(WASWebhook))},
				arg{"tls-private-key-file", p.key(string(WASWebhook))},
			)
		}
	case Kwok:
		defaults = []arg{
			{"kubeconfig", p.kubeconfig(Kwok)},
			{"config", p.kwokConfig},
			{"manage-all-nodes", "false"},
			{"manage-nodes-with-annotation-selector", kwokNodeSelector()},
			{"node-lease-duration-seconds", "40"},
			{"server-address", fmt.Sprintf("%s:%d", local, c.ports.kwok)},
			{"cidr", "10.244.0.0/16"},
		}
	}
	return assembleArgs(defaults, cfg.EffectiveFeatureGates(name), cfg.Components[name].ExtraArgs)
}

func kwokNodeSelector() string {
	return kwoknodes.ManagedAnnotation + "=" + kwoknodes.ManagedAnnotationValue
}

// kcmControllers is kube-controller-manager's --controllers: everything,
// less what the reference implementation replaces.
func (c *Cluster) kcmControllers() string {
	v := "*"
	if c.cfg.Reference.Enabled {
		for _, name := range ReplacedControllers {
			v += ",-" + name
		}
	}
	return v
}
