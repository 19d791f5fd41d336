package localcluster

import (
	"fmt"
	"strings"

	"github.com/workload-aware/apps-harness/pkg/kwoknodes"
	"github.com/workload-aware/apps-harness/pkg/webhookclient"
)

// Each component's own flags, one function per component: what the harness
// sets to run it on loopback with the cluster's PKI. Gates, runtime-config
// and overrides are added by componentArgs.

const loopback = "127.0.0.1"

var coreFlags = map[Component]func(*Cluster) []arg{
	Etcd:              (*Cluster).etcdFlags,
	APIServer:         (*Cluster).apiServerFlags,
	ControllerManager: (*Cluster).controllerManagerFlags,
	Scheduler:         (*Cluster).schedulerFlags,
	Kwok:              (*Cluster).kwokFlags,
}

func (c *Cluster) etcdFlags() []arg {
	client := fmt.Sprintf("http://%s:%d", loopback, c.ports.etcdClient)
	peer := fmt.Sprintf("http://%s:%d", loopback, c.ports.etcdPeer)
	return []arg{
		{"name", "etcd0"},
		{"data-dir", c.paths.etcdData},
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
}

func (c *Cluster) apiServerFlags() []arg {
	p := c.paths
	return []arg{
		{"etcd-servers", fmt.Sprintf("http://%s:%d", loopback, c.ports.etcdClient)},
		{"bind-address", loopback},
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
		{"runtime-config", FormatRuntimeConfig(c.cfg.EffectiveRuntimeConfig())},
		// Writes to Workloads and PodGroups are audited with their user, so
		// benchmarks can attribute every write to the component that made it.
		{"audit-policy-file", p.auditPolicy},
		{"audit-log-path", p.auditLog()},
		// Every admission webhook is called with the client certificate
		// webhookclient.CommonName, so a webhook can refuse anyone else.
		{"admission-control-config-file", p.admissionConfig()},
	}
}

// servingFlags are what kube-controller-manager and kube-scheduler share:
// their kubeconfig for everything, and a self-signed /healthz on loopback.
func (c *Cluster) servingFlags(name Component) []arg {
	kc := c.paths.kubeconfig(name)
	return []arg{
		{"kubeconfig", kc},
		{"authentication-kubeconfig", kc},
		{"authorization-kubeconfig", kc},
		{"bind-address", loopback},
		{"secure-port", fmt.Sprint(c.ports.of(name))},
		{"cert-dir", c.paths.certDir(name)},
		{"leader-elect", "false"},
	}
}

func (c *Cluster) controllerManagerFlags() []arg {
	p := c.paths
	return append(c.servingFlags(ControllerManager),
		arg{"service-account-private-key-file", p.saKey},
		arg{"root-ca-file", p.crt("ca")},
		arg{"cluster-signing-cert-file", p.crt("ca")},
		arg{"cluster-signing-key-file", p.key("ca")},
		arg{"use-service-account-credentials", "true"},
		arg{"controllers", c.kcmControllers()},
		// Node health is checked every second rather than every five, so
		// new kwok nodes lose their not-ready taint within a second.
		arg{"node-monitor-period", "1s"},
		// The default client rate (20/s, burst 30) makes the namespace
		// controller take seconds per deleted namespace (a list and a delete
		// per resource type) and the garbage collector queue behind it, when
		// a parallel suite creates and deletes namespaces by the dozen.
		arg{"kube-api-qps", "100"},
		arg{"kube-api-burst", "200"},
	)
}

func (c *Cluster) schedulerFlags() []arg { return c.servingFlags(Scheduler) }

func (c *Cluster) kwokFlags() []arg {
	return []arg{
		{"kubeconfig", c.paths.kubeconfig(Kwok)},
		{"config", c.paths.kwokConfig},
		{"manage-all-nodes", "false"},
		{"manage-nodes-with-annotation-selector", kwoknodes.ManagedAnnotation + "=" + kwoknodes.ManagedAnnotationValue},
		{"node-lease-duration-seconds", "40"},
		{"server-address", fmt.Sprintf("%s:%d", loopback, c.ports.kwok)},
		{"cidr", "10.244.0.0/16"},
	}
}

// addonFlags are an add-on component's Args with its variables expanded.
func (c *Cluster) addonFlags(name Component) ([]arg, error) {
	_, ac := c.cfg.addonComponent(name)
	if ac == nil {
		return nil, fmt.Errorf("no component %q in this cluster", name)
	}
	v := vars{"KUBECONFIG": c.paths.kubeconfig(name), "PORT": fmt.Sprint(c.ports.of(name))}
	if ac.Serves != "" {
		v["SERVING_PORT"] = fmt.Sprint(c.ports.serving(name))
		v["TLS_CERT_FILE"], v["TLS_PRIVATE_KEY_FILE"] = c.paths.crt(servingCertName(name)), c.paths.key(servingCertName(name))
		v["CLIENT_CA_FILE"], v["WEBHOOK_CLIENT_NAME"] = c.paths.crt("ca"), webhookclient.CommonName
	}
	out := make([]arg, 0, len(ac.Args))
	for _, s := range ac.Args {
		expanded, err := v.expand(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		a, err := parseArg(expanded)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// kcmControllers is kube-controller-manager's --controllers: everything,
// less what the add-ons replace.
func (c *Cluster) kcmControllers() string {
	v := []string{"*"}
	for _, a := range c.cfg.Addons {
		for _, name := range a.ReplacesControllers {
			v = append(v, "-"+name)
		}
	}
	return strings.Join(v, ",")
}
