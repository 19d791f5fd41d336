package install

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/api/intent"
	"github.com/workload-aware/apps-harness/deploy"
	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/builder"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
	"github.com/workload-aware/apps-harness/pkg/pki"
)

// rotationValidity is the certificate lifetime the spec runs the webhook
// with: the webhook renews it when a third is left, so about 40 s in, and a
// renewal that fails leaves 20 s of requests to reject before it expires.
const rotationValidity = time.Minute

// Event reasons the webhook records on its Secret (docs/install.md).
const (
	reasonCertificateReplaced = "CertificateReplaced"
	reasonCertificateRenewed  = "CertificateRenewed"
)

var _ = ginkgo.Describe("Install of the reference implementation: the webhook's certificate", framework.Harness, framework.Serial, framework.Disruptive, func() {
	f := framework.New("install-cert-rotation")

	// deploy/'s lifecycle, run on the webhook as it is installed here (the
	// local cluster's process, or deploy/'s DaemonSet on an existing
	// cluster), pointed at a Secret in the spec's namespace: the live Secret
	// is not touched, and the webhook gets exactly deploy/'s webhook RBAC
	// there, so the spec also proves that RBAC suffices.
	ginkgo.It("replaces a planted Secret, then renews the serving certificate in the running webhook from the same CA, rejecting no request", func(ctx context.Context) {
		in := requireInstalled(ctx, f, framework.ReferenceWebhook)
		if framework.Intent.Mode != framework.IntentAnnotation {
			ginkgo.Skip("the reference webhook sees only intent written as its annotation; the server serves spec.scheduling natively")
		}
		wc, secretName, host, change := onOwnSecret(ctx, f, in)
		cs := f.ClientSet

		ginkgo.By("planting a Secret " + secretName + " that was-controller-manager did not make")
		planted := plantSecret(ctx, f, secretName, host)

		framework.Reconfigure(ctx, framework.ReconfigureInput{Cluster: in.local, Changes: []framework.ComponentChange{change}})
		running := in.running(ctx, f)
		addr := webhookAddress(ctx, f, in, wc.Name)

		ginkgo.By("checking that the planted Secret was replaced, with an event, and its CA is not trusted")
		secret, err := cs.CoreV1().Secrets(f.Namespace).Get(ctx, secretName, metav1.GetOptions{})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(secret.Data["ca.crt"]).NotTo(gomega.Equal(planted.Data["ca.crt"]), "the planted CA was kept")
		gomega.Expect(secret.Labels).To(gomega.HaveKeyWithValue("app.kubernetes.io/managed-by", "was-controller-manager"))
		expectEvent(ctx, f, secretName, corev1.EventTypeWarning, reasonCertificateReplaced)
		bundle := publishedBundle(ctx, f, wc.Name, secret.Data["ca.crt"], planted.Data["ca.crt"])
		first := servedCertificate(addr, host, bundle)

		ginkgo.By("writing intent-carrying updates (each one reviewed by the webhook) while the certificate is renewed")
		traffic := startTraffic(ctx, f)
		var renewed *x509.Certificate
		gomega.Eventually(ctx, func() string {
			renewed = servedCertificate(addr, host, bundle)
			return renewed.SerialNumber.String()
		}).WithTimeout(rotationValidity+time.Minute).WithPolling(2*time.Second).ShouldNot(gomega.Equal(first.SerialNumber.String()),
			"the webhook still serves its first certificate (valid until %s)", first.NotAfter)
		renewedAt := time.Now()
		gomega.Eventually(ctx, func() int { return traffic.succeededSince(renewedAt) }).WithTimeout(time.Minute).WithPolling(time.Second).
			Should(gomega.BeNumerically(">=", 3), "requests after the renewal")
		traffic.stop()

		ginkgo.By(fmt.Sprintf("checking %d requests, the process and the CA", traffic.total()))
		gomega.Expect(traffic.failures()).To(gomega.BeEmpty(), "requests rejected around the renewal")
		gomega.Expect(traffic.succeededBefore(renewedAt)).To(gomega.BeNumerically(">=", 3), "requests before the renewal")
		gomega.Expect(in.running(ctx, f)).To(gomega.Equal(running), "the webhook restarted or stopped: the renewal must happen in the running process")
		gomega.Expect(caBundle(ctx, f, wc.Name)).To(gomega.Equal(bundle), "the caBundle changed: the renewal must reuse the CA")
		gomega.Expect(renewed.NotAfter.After(first.NotAfter)).To(gomega.BeTrue(), "the renewed certificate ends %s, not after the first's %s", renewed.NotAfter, first.NotAfter)
		expectEvent(ctx, f, secretName, corev1.EventTypeNormal, reasonCertificateRenewed)
	})

	// A Secret's type cannot be changed, and an immutable Secret's data
	// cannot: an update of either into the webhook's own fails on a real API
	// server (a fake clientset lets it through), and a webhook that only
	// updates never starts. It must delete the planted object and create its
	// own, with one event, the process running on.
	for _, planted := range []struct {
		kind  string
		plant func(*corev1.Secret)
	}{
		{"of type Opaque", func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }},
		{"that is immutable", func(s *corev1.Secret) { s.Immutable = ptr.To(true) }},
	} {
		ginkgo.It("replaces a planted Secret "+planted.kind+" by deleting it and creating its own, with an event, and serves from it without a restart", func(ctx context.Context) {
			in := requireInstalled(ctx, f, framework.ReferenceWebhook)
			wc, secretName, host, change := onOwnSecret(ctx, f, in)

			ginkgo.By("planting a Secret " + secretName + " " + planted.kind + " that was-controller-manager did not make")
			old := plantSecret(ctx, f, secretName, host, planted.plant)

			framework.Reconfigure(ctx, framework.ReconfigureInput{Cluster: in.local, Changes: []framework.ComponentChange{change}})
			running := in.running(ctx, f)

			ginkgo.By("checking that a new Secret of the webhook's own replaced it, with an event, and is what the webhook serves")
			secret, err := f.ClientSet.CoreV1().Secrets(f.Namespace).Get(ctx, secretName, metav1.GetOptions{})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(secret.UID).NotTo(gomega.Equal(old.UID), "the planted Secret %s is still there: it cannot be updated into the webhook's", planted.kind)
			gomega.Expect(secret.Type).To(gomega.Equal(corev1.SecretTypeTLS))
			gomega.Expect(secret.Labels).To(gomega.HaveKeyWithValue("app.kubernetes.io/managed-by", "was-controller-manager"))
			gomega.Expect(secret.Data["ca.crt"]).NotTo(gomega.Equal(old.Data["ca.crt"]), "the planted CA was kept")
			expectEvent(ctx, f, secretName, corev1.EventTypeWarning, reasonCertificateReplaced)
			bundle := publishedBundle(ctx, f, wc.Name, secret.Data["ca.crt"], old.Data["ca.crt"])
			servedCertificate(webhookAddress(ctx, f, in, wc.Name), host, bundle)
			gomega.Consistently(ctx, func(ctx context.Context) []string { return in.running(ctx, f) }).WithTimeout(10*time.Second).WithPolling(time.Second).
				Should(gomega.Equal(running), "the webhook restarted after replacing the Secret")
		})
	}
})

// onOwnSecret prepares the webhook in to run deploy/'s certificate
// lifecycle on a Secret of the spec's namespace: the change that restarts it
// so (to apply once the spec has set the Secret up), deploy/'s webhook RBAC
// granted there, and cleanups that put its clientConfig back and check that
// the live Secret was not touched. It returns the webhook configuration, the
// Secret's name, the host the API server verifies and the change.
func onOwnSecret(ctx context.Context, f *framework.Framework, in *installed) (wc *admissionregistrationv1.ValidatingWebhookConfiguration, secretName, host string, change framework.ComponentChange) {
	ginkgo.GinkgoHelper()
	d := rendered()
	wc = d.webhookConfiguration()
	secretName = selfSignedSecretName(d)
	host = webhookServerName(ctx, f, wc.Name)
	change = framework.ComponentChange{Component: framework.ReferenceWebhook, ComponentConfig: localcluster.ComponentConfig{
		ExtraArgs: rotationArgs(in, f.Namespace+"/"+secretName, host, wc.Name)}}
	framework.RequireReconfigure(change)
	if in.local == nil {
		expectLiveSecretKept(ctx, f, in)
	}
	grantWebhookRBAC(ctx, f, d, in.user())
	restoreWebhookClientConfig(ctx, f, wc.Name)
	return wc, secretName, host, change
}

// rotationArgs are the webhook's flags for the spec: its certificate in
// secret (namespace/name), valid rotationValidity, its CA kept in the
// webhook configuration wc.
func rotationArgs(in *installed, secret, host, wc string) map[string]string {
	args := map[string]string{
		"self-signed-cert-secret":                     secret,
		"self-signed-ca-bundle-webhook-configuration": wc,
		"self-signed-cert-validity":                   rotationValidity.String(),
	}
	if in.local != nil {
		// The local cluster's webhook serves certificate files at its URL's
		// host: the Secret replaces them, for that host.
		args["tls-cert-file"], args["tls-private-key-file"] = "", ""
		args["self-signed-cert-hosts"] = host
	}
	// deploy/'s DaemonSet sets no certificate files, and its own
	// --self-signed-cert-hosts (the Service's names) stay.
	return args
}

// selfSignedSecretName is the Secret name deploy/'s webhook keeps its
// certificate in (its RBAC names it).
func selfSignedSecretName(d *deployObjects) string {
	ds := get[appsv1.DaemonSet](d, "DaemonSet", deploy.Namespace, "was-webhook")
	for _, a := range ds.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--self-signed-cert-secret="); ok {
			_, name, _ := strings.Cut(v, "/")
			return name
		}
	}
	ginkgo.Fail("deploy/'s webhook has no --self-signed-cert-secret")
	return ""
}

// grantWebhookRBAC gives user deploy/'s webhook certificate RBAC, with its
// namespaced Role in the spec's namespace, until the spec ends.
func grantWebhookRBAC(ctx context.Context, f *framework.Framework, d *deployObjects, user string) {
	ginkgo.GinkgoHelper()
	cs := f.ClientSet.RbacV1()
	subject := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	role := get[rbacv1.Role](d, "Role", deploy.Namespace, "was:webhook-certificate")
	_, err := cs.Roles(f.Namespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role.Name}, Rules: role.Rules}, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	_, err = cs.RoleBindings(f.Namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}, Subjects: subject}, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())

	cr := get[rbacv1.ClusterRole](d, "ClusterRole", "", "was:webhook-ca-bundle")
	name := "was-harness:" + f.Namespace + ":webhook-ca-bundle"
	_, err = cs.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: cr.Rules}, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(func(ctx context.Context) {
		for _, err := range []error{
			cs.ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}),
			cs.ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}),
		} {
			if !apierrors.IsNotFound(err) {
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "deleting %s", name)
			}
		}
	})
	_, err = cs.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}, Subjects: subject}, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
}

// restoreWebhookClientConfig puts the webhook configuration's clientConfig
// (the local cluster's URL and CA, or deploy/'s Service and the CA of its
// Secret) back when the spec ends, after the webhook is back on its own
// certificate (cleanups run last registered first, and this one is
// registered before the restart's), and waits until the API server trusts
// the webhook again.
func restoreWebhookClientConfig(ctx context.Context, f *framework.Framework, name string) {
	ginkgo.GinkgoHelper()
	api := f.ClientSet.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	original, err := api.Get(ctx, name, metav1.GetOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "the webhook configuration %s", name)
	ginkgo.DeferCleanup(func(ctx context.Context) {
		gomega.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			wc, err := api.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for i := range wc.Webhooks {
				wc.Webhooks[i].ClientConfig = original.Webhooks[i].ClientConfig
			}
			_, err = api.Update(ctx, wc, metav1.UpdateOptions{})
			return err
		})).To(gomega.Succeed(), "restoring the caBundle of %s", name)
		// The next spec must find the webhook trusted again.
		probe := builder.Deployment("webhook-trusted-again", f.Namespace).Replicas(0).Recreate().Obj()
		gomega.Eventually(ctx, func() error {
			u, err := framework.Intent.WithDeploymentScheduling(probe, gang())
			if err != nil {
				return err
			}
			dyn, err := dynamic.NewForConfig(framework.RESTConfig())
			if err != nil {
				return err
			}
			_, err = dyn.Resource(appsv1.SchemeGroupVersion.WithResource("deployments")).Namespace(f.Namespace).
				Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}).WithTimeout(30*time.Second).WithPolling(time.Second).Should(gomega.Succeed(), "the API server does not trust the webhook again")
	})
}

// plantSecret creates a Secret of the webhook's name that someone else
// made: a valid certificate for the webhook's host, from a CA of their own,
// so only its origin makes the webhook replace it.
func plantSecret(ctx context.Context, f *framework.Framework, name, host string, mutate ...func(*corev1.Secret)) *corev1.Secret {
	ginkgo.GinkgoHelper()
	ca, err := pki.NewCA("planted")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	req := pki.CertRequest{CommonName: host, Server: true}
	if ip := net.ParseIP(host); ip != nil {
		req.IPs = []net.IP{ip}
	} else {
		req.DNSNames = []string{host}
	}
	kp, err := ca.Issue(req)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	key, _ := pki.KeyPEM(kp.Key)
	caKey, _ := pki.KeyPEM(ca.Key)
	planted := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": pki.CertPEM(kp.Cert), "tls.key": key, "ca.crt": pki.CertPEM(ca.Cert), "ca.key": caKey},
	}
	for _, m := range mutate {
		m(planted)
	}
	s, err := f.ClientSet.CoreV1().Secrets(f.Namespace).Create(ctx, planted, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return s
}

// webhookClientConfig is how the API server calls the webhook now.
func webhookClientConfig(ctx context.Context, f *framework.Framework, name string) admissionregistrationv1.WebhookClientConfig {
	ginkgo.GinkgoHelper()
	wc, err := f.ClientSet.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return wc.Webhooks[0].ClientConfig
}

// webhookURL is the URL the local cluster calls the webhook at.
func webhookURL(cc admissionregistrationv1.WebhookClientConfig) *url.URL {
	ginkgo.GinkgoHelper()
	gomega.Expect(cc.URL).NotTo(gomega.BeNil(), "the local cluster calls the webhook by URL")
	u, err := url.Parse(*cc.URL)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return u
}

// webhookServerName is the name the API server verifies the webhook's
// certificate for: its URL's host, or <service>.<namespace>.svc.
func webhookServerName(ctx context.Context, f *framework.Framework, name string) string {
	ginkgo.GinkgoHelper()
	cc := webhookClientConfig(ctx, f, name)
	if svc := cc.Service; svc != nil {
		return svc.Name + "." + svc.Namespace + ".svc"
	}
	return webhookURL(cc).Hostname()
}

// webhookAddress is where the spec's own TLS client reaches the webhook:
// the local cluster's URL, or, on an existing cluster, where the suite
// runs outside the cluster network, a port forwarded through the API server
// to the port of a webhook pod the Service sends the API server's calls to.
func webhookAddress(ctx context.Context, f *framework.Framework, in *installed, name string) string {
	ginkgo.GinkgoHelper()
	cc := webhookClientConfig(ctx, f, name)
	if in.local != nil {
		return webhookURL(cc).Host
	}
	gomega.Expect(cc.Service).NotTo(gomega.BeNil(), "deploy/ registers the webhook by Service")
	svc, err := f.ClientSet.CoreV1().Services(cc.Service.Namespace).Get(ctx, cc.Service.Name, metav1.GetOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "the webhook's Service %s/%s", cc.Service.Namespace, cc.Service.Name)
	port := int32(443)
	if cc.Service.Port != nil {
		port = *cc.Service.Port
	}
	pods := in.pods(ctx, f)
	gomega.Expect(pods).NotTo(gomega.BeEmpty(), "no webhook pod")
	target := servicePortTarget(svc, port, &pods[0])
	gomega.Expect(target).NotTo(gomega.BeZero(), "Service %s/%s has no port %d to the webhook's pod %s", svc.Namespace, svc.Name, port, pods[0].Name)
	return framework.PortForward(ctx, &pods[0], target)
}

// servicePortTarget is the container port of pod that the Service's port
// forwards to (0 if none).
func servicePortTarget(svc *corev1.Service, port int32, pod *corev1.Pod) int32 {
	for _, p := range svc.Spec.Ports {
		if p.Port != port {
			continue
		}
		if p.TargetPort.Type == intstr.Int {
			if p.TargetPort.IntVal == 0 {
				return p.Port
			}
			return p.TargetPort.IntVal
		}
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == p.TargetPort.StrVal {
					return cp.ContainerPort
				}
			}
		}
	}
	return 0
}

// running identifies what runs the component now: the local cluster's
// process, or each pod's container. A restart, a replaced pod or a process
// gone reads differently.
func (in *installed) running(ctx context.Context, f *framework.Framework) []string {
	ginkgo.GinkgoHelper()
	if in.local != nil {
		pid := in.local.PIDs()[in.component]
		return []string{fmt.Sprintf("pid %d, running %t", pid, pid > 0 && syscall.Kill(pid, 0) == nil)}
	}
	var out []string
	for _, p := range in.pods(ctx, f) {
		for _, c := range p.Status.ContainerStatuses {
			out = append(out, fmt.Sprintf("pod %s (uid %s, deleting %t): container %s %s, restarts %d, running %t",
				p.Name, p.UID, p.DeletionTimestamp != nil, c.Name, c.ContainerID, c.RestartCount, c.State.Running != nil))
		}
	}
	slices.Sort(out)
	return out
}

// expectLiveSecretKept checks, once the spec has put the webhook back,
// that the Secret deploy/'s webhook runs with on this cluster was never
// written: the spec works on a Secret of its own namespace.
func expectLiveSecretKept(ctx context.Context, f *framework.Framework, in *installed) {
	ginkgo.GinkgoHelper()
	var ref string
	for _, a := range in.daemonSet.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--self-signed-cert-secret="); ok {
			ref = v
		}
	}
	namespace, name, ok := strings.Cut(ref, "/")
	gomega.Expect(ok).To(gomega.BeTrue(), "DaemonSet %s/%s has no --self-signed-cert-secret=namespace/name", in.daemonSet.Namespace, in.daemonSet.Name)
	api := f.ClientSet.CoreV1().Secrets(namespace)
	before, err := api.Get(ctx, name, metav1.GetOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "the webhook's Secret %s", ref)
	ginkgo.DeferCleanup(func(ctx context.Context) {
		after, err := api.Get(ctx, name, metav1.GetOptions{})
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "the webhook's Secret %s", ref)
		gomega.Expect(after.ResourceVersion).To(gomega.Equal(before.ResourceVersion), "the webhook's live Secret %s was written", ref)
	})
}

// publishedBundle waits until the caBundle of the webhook configuration
// name trusts the webhook's own CA, and checks that it never trusts the
// planted one. Updates only add to a bundle (docs/install.md), so it may hold
// other unexpired CAs too, such as the installed webhook's; the webhook
// publishes its CA as it starts, which may end after its process is ready.
func publishedBundle(ctx context.Context, f *framework.Framework, name string, own, planted []byte) []byte {
	ginkgo.GinkgoHelper()
	var bundle []byte
	holdsOwn := func() bool {
		bundle = caBundle(ctx, f, name)
		held := pemCertificates(bundle)
		for _, c := range pemCertificates(planted) {
			gomega.Expect(held).NotTo(gomega.ContainElement(c), "the caBundle trusts the planted Secret's CA")
		}
		for _, c := range pemCertificates(own) {
			if !slices.Contains(held, c) {
				return false
			}
		}
		return true
	}
	gomega.Eventually(ctx, holdsOwn).WithTimeout(30*time.Second).WithPolling(time.Second).Should(gomega.BeTrue(),
		"the caBundle of %s does not hold the webhook's own CA", name)
	return bundle
}

// pemCertificates are the DER bytes of each certificate in data, as strings.
func pemCertificates(data []byte) []string {
	var out []string
	for {
		var block *pem.Block
		if block, data = pem.Decode(data); block == nil {
			return out
		}
		if block.Type == "CERTIFICATE" {
			out = append(out, string(block.Bytes))
		}
	}
}

func caBundle(ctx context.Context, f *framework.Framework, name string) []byte {
	ginkgo.GinkgoHelper()
	wc, err := f.ClientSet.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return wc.Webhooks[0].ClientConfig.CABundle
}

// servedCertificate is the certificate the webhook, reached at addr, shows a
// new TLS client now, verified as the API server verifies it: against the
// caBundle, for host (webhookServerName).
func servedCertificate(addr, host string, bundle []byte) *x509.Certificate {
	ginkgo.GinkgoHelper()
	pool := x509.NewCertPool()
	gomega.Expect(pool.AppendCertsFromPEM(bundle)).To(gomega.BeTrue(), "the caBundle holds no certificate")
	// The client ends the handshake itself once it has checked the served
	// certificate: it has no client certificate the webhook would accept
	// (--client-ca-file), and a handshake the webhook refuses resets the
	// connection, which ends a port-forward through the API server.
	var served *x509.Certificate
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: host,
		VerifyConnection: func(cs tls.ConnectionState) error {
			served = cs.PeerCertificates[0]
			return errGotCertificate
		}})
	if err == nil {
		conn.Close()
	}
	if served == nil || !errors.Is(err, errGotCertificate) {
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "a TLS client trusting the caBundle cannot connect to the webhook")
	}
	return served
}

// errGotCertificate ends servedCertificate's handshake.
var errGotCertificate = errors.New("the served certificate is all this client wants")

func expectEvent(ctx context.Context, f *framework.Framework, secret, eventType, reason string) {
	ginkgo.GinkgoHelper()
	gomega.Eventually(ctx, func() []string {
		list, err := f.ClientSet.CoreV1().Events(f.Namespace).List(ctx, metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.kind": "Secret", "involvedObject.name": secret}.String(),
		})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		var out []string
		for _, e := range list.Items {
			out = append(out, e.Type+" "+e.Reason)
		}
		return out
	}).WithTimeout(30*time.Second).WithPolling(time.Second).Should(gomega.ContainElement(eventType+" "+reason),
		"an event %s %s on Secret %s", eventType, reason, secret)
}

// traffic updates an intent-carrying Deployment over and over, each update
// reviewed by the webhook (failurePolicy Fail: a TLS failure rejects it).
type traffic struct {
	mu     sync.Mutex
	oks    []time.Time
	errs   []string
	cancel context.CancelFunc
	done   chan struct{}
}

func startTraffic(ctx context.Context, f *framework.Framework) *traffic {
	ginkgo.GinkgoHelper()
	d := builder.Deployment("ticker", f.Namespace).Replicas(0).Recreate().Obj()
	// The first write may meet an API server that has not seen the new
	// caBundle yet: wait for it to trust the webhook before counting.
	gomega.Eventually(ctx, func() error {
		_, err := framework.Intent.CreateDeployment(ctx, d, gang())
		return err
	}).WithTimeout(30*time.Second).WithPolling(time.Second).Should(gomega.Succeed(), "creating the ticker through the webhook")
	ctx, cancel := context.WithCancel(ctx)
	t := &traffic{cancel: cancel, done: make(chan struct{})}
	ginkgo.DeferCleanup(t.stop)
	go func() {
		defer ginkgo.GinkgoRecover()
		defer close(t.done)
		for i := 0; ctx.Err() == nil; i++ {
			_, err := framework.Intent.UpdateDeployment(ctx, f.Namespace, d.Name, func(d *appsv1.Deployment, _ **framework.DeploymentScheduling) {
				if d.Annotations[intent.DeploymentAnnotation] == "" {
					panic("the ticker lost its intent annotation: its updates would not reach the webhook")
				}
				d.Annotations["was-harness.io/tick"] = fmt.Sprint(i)
			})
			t.mu.Lock()
			switch {
			case err == nil:
				t.oks = append(t.oks, time.Now())
			case ctx.Err() == nil:
				t.errs = append(t.errs, fmt.Sprintf("%s: %v", time.Now().Format(time.RFC3339), err))
			}
			t.mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return t
}

func (t *traffic) stop() {
	t.cancel()
	<-t.done
}

func (t *traffic) failures() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.errs...)
}

func (t *traffic) total() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.oks) + len(t.errs)
}

func (t *traffic) count(pred func(time.Time) bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, at := range t.oks {
		if pred(at) {
			n++
		}
	}
	return n
}

func (t *traffic) succeededSince(at time.Time) int  { return t.count(at.Before) }
func (t *traffic) succeededBefore(at time.Time) int { return t.count(at.After) }
