package localcluster

import (
	"fmt"
	"net"
	"os"
	"slices"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/workload-aware/apps-harness/pkg/pki"
)

// identity is a client certificate subject; RBAC's bootstrap policy grants the
// system:* users and the system:masters group what each component needs.
type identity struct {
	file string
	cn   string
	orgs []string
}

var coreIdentities = []identity{
	{"admin", "kubernetes-admin", []string{"system:masters"}},
	{string(ControllerManager), "system:kube-controller-manager", nil},
	{string(Scheduler), "system:kube-scheduler", nil},
	// kwok plays every kubelet; it needs node and pod status writes across all nodes.
	{string(Kwok), "kwok", []string{"system:masters"}},
	{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}},
}

// clientIdentities are the core ones plus one per add-on component, with
// no group: an add-on may do only what its own manifests' RBAC grants.
func (c *Cluster) clientIdentities() []identity {
	out := slices.Clone(coreIdentities)
	for _, a := range c.cfg.Addons {
		for _, ac := range a.Components {
			out = append(out, identity{string(ac.Name), ac.User, nil})
		}
	}
	return out
}

// writePKI generates the CA, the apiserver serving certificate, one client
// certificate per identity, the service-account key pair, and a kubeconfig per
// component plus the admin's.
func (c *Cluster) writePKI() error {
	p := c.paths
	ca, err := pki.NewCA("was-harness-ca")
	if err != nil {
		return err
	}
	if _, _, err := ca.Write(p.pki); err != nil {
		return err
	}
	ips := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")}
	if ip := net.ParseIP(c.advertiseAddress); ip != nil && !ip.IsLoopback() {
		ips = append(ips, ip)
	}
	serving, err := ca.Issue(pki.CertRequest{
		CommonName: "kube-apiserver",
		DNSNames:   []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPs:        ips,
		Server:     true,
	})
	if err != nil {
		return err
	}
	if _, _, err := serving.Write(p.pki, "apiserver"); err != nil {
		return err
	}
	if err := c.writeAddonServingCerts(ca); err != nil {
		return err
	}
	if err := c.writeWebhookClient(ca); err != nil {
		return err
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", c.ports.apiserver)
	for _, id := range c.clientIdentities() {
		kp, err := ca.Issue(pki.CertRequest{CommonName: id.cn, Organization: id.orgs, Client: true})
		if err != nil {
			return err
		}
		if _, _, err := kp.Write(p.pki, id.file); err != nil {
			return err
		}
		kcPath := p.kubeconfig(Component(id.file))
		if id.file == "admin" {
			kcPath = p.adminKubeconfig()
		} else if id.file == "apiserver-kubelet-client" {
			continue
		}
		if err := writeKubeconfig(kcPath, c.cfg.Name, server, ca, kp); err != nil {
			return err
		}
	}
	sa, err := pki.NewServiceAccountKey()
	if err != nil {
		return err
	}
	keyPEM, err := pki.KeyPEM(sa)
	if err != nil {
		return err
	}
	pubPEM, err := pki.PublicKeyPEM(sa)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.saKey, keyPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(p.saPub, pubPEM, 0o644)
}

// writeKubeconfig writes a kubeconfig with the certificates embedded, so it
// can be copied anywhere on the machine.
func writeKubeconfig(path, name, server string, ca *pki.CA, kp *pki.KeyPair) error {
	keyPEM, err := pki.KeyPEM(kp.Key)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: pki.CertPEM(ca.Cert)}
	user := kp.Cert.Subject.CommonName
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: pki.CertPEM(kp.Cert), ClientKeyData: keyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, path)
}

// servingCertName names a component's serving certificate in the PKI
// directory, apart from its client certificate (named after the component).
func servingCertName(name Component) string { return string(name) + "-serving" }

// writeAddonServingCerts issues the serving certificate of each add-on
// component that serves a webhook: the apiserver calls it on loopback.
func (c *Cluster) writeAddonServingCerts(ca *pki.CA) error {
	for _, a := range c.cfg.Addons {
		for _, ac := range a.Components {
			if ac.Serves == "" {
				continue
			}
			kp, err := ca.Issue(pki.CertRequest{CommonName: string(ac.Name), DNSNames: []string{"localhost"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
			if err != nil {
				return err
			}
			if _, _, err := kp.Write(c.paths.pki, servingCertName(ac.Name)); err != nil {
				return err
			}
		}
	}
	return nil
}
