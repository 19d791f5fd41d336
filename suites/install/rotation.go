package install

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

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

	// deploy/'s lifecycle, run on the local cluster's webhook process: the
	// Secret lives in the spec's namespace and the webhook gets exactly
	// deploy/'s webhook RBAC there, so the spec also proves that RBAC suffices.
	ginkgo.It("replaces a planted Secret, then renews the serving certificate in the running webhook from the same CA, rejecting no request", func(ctx context.Context) {
		lc := requireInstalled(ctx, f, framework.ReferenceWebhook).requireLocal()
		if framework.Intent.Mode != framework.IntentAnnotation {
			ginkgo.Skip("the reference webhook sees only intent written as its annotation; the server serves spec.scheduling natively")
		}
		d := rendered()
		wc := d.webhookConfiguration()
		secretName := selfSignedSecretName(d)
		cs := f.ClientSet
		grantWebhookRBAC(ctx, f, d, componentUser(lc, framework.ReferenceWebhook))
		restoreWebhookClientConfig(ctx, f, wc.Name)

		ginkgo.By("planting a Secret " + secretName + " that was-controller-manager did not make")
		planted := plantSecret(ctx, f, secretName)

		webhookURL := liveWebhookURL(ctx, f, wc.Name)
		framework.Reconfigure(ctx, framework.ReconfigureInput{Cluster: lc, Changes: []framework.ComponentChange{{
			Component: framework.ReferenceWebhook,
			ComponentConfig: localcluster.ComponentConfig{ExtraArgs: map[string]string{
				// The local cluster's certificate files are replaced by the Secret.
				"tls-cert-file": "", "tls-private-key-file": "",
				"self-signed-cert-secret":                     f.Namespace + "/" + secretName,
				"self-signed-cert-hosts":                      webhookURL.Hostname(),
				"self-signed-ca-bundle-webhook-configuration": wc.Name,
				"self-signed-cert-validity":                   rotationValidity.String(),
			}},
		}}})
		pid := lc.PIDs()[framework.ReferenceWebhook]

		ginkgo.By("checking that the planted Secret was replaced, with an event, and its CA is not trusted")
		secret, err := cs.CoreV1().Secrets(f.Namespace).Get(ctx, secretName, metav1.GetOptions{})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(secret.Data["ca.crt"]).NotTo(gomega.Equal(planted.Data["ca.crt"]), "the planted CA was kept")
		gomega.Expect(secret.Labels).To(gomega.HaveKeyWithValue("app.kubernetes.io/managed-by", "was-controller-manager"))
		expectEvent(ctx, f, secretName, corev1.EventTypeWarning, reasonCertificateReplaced)
		bundle := caBundle(ctx, f, wc.Name)
		gomega.Expect(bundle).To(gomega.Equal(secret.Data["ca.crt"]), "the caBundle is not the Secret's CA")
		first := servedCertificate(webhookURL, bundle)

		ginkgo.By("writing intent-carrying updates (each one reviewed by the webhook) while the certificate is renewed")
		traffic := startTraffic(ctx, f)
		var renewed *x509.Certificate
		gomega.Eventually(ctx, func() string {
			renewed = servedCertificate(webhookURL, bundle)
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
		gomega.Expect(lc.PIDs()[framework.ReferenceWebhook]).To(gomega.Equal(pid), "the webhook restarted")
		gomega.Expect(syscall.Kill(pid, 0)).To(gomega.Succeed(), "the webhook (pid %d) is not running", pid)
		gomega.Expect(caBundle(ctx, f, wc.Name)).To(gomega.Equal(bundle), "the caBundle changed: the renewal must reuse the CA")
		gomega.Expect(renewed.NotAfter.After(first.NotAfter)).To(gomega.BeTrue(), "the renewed certificate ends %s, not after the first's %s", renewed.NotAfter, first.NotAfter)
		expectEvent(ctx, f, secretName, corev1.EventTypeNormal, reasonCertificateRenewed)
	})
})

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
// (the local cluster's URL and CA) back when the spec ends, after the
// webhook is back on the local cluster's certificate (cleanups run last
// registered first, and this one is registered before the restart's).
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
// made: a valid certificate for the webhook, from a CA of their own.
func plantSecret(ctx context.Context, f *framework.Framework, name string) *corev1.Secret {
	ginkgo.GinkgoHelper()
	ca, err := pki.NewCA("planted")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	kp, err := ca.Issue(pki.CertRequest{CommonName: "127.0.0.1", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	key, _ := pki.KeyPEM(kp.Key)
	caKey, _ := pki.KeyPEM(ca.Key)
	s, err := f.ClientSet.CoreV1().Secrets(f.Namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": pki.CertPEM(kp.Cert), "tls.key": key, "ca.crt": pki.CertPEM(ca.Cert), "ca.key": caKey},
	}, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return s
}

func liveWebhookURL(ctx context.Context, f *framework.Framework, name string) *url.URL {
	ginkgo.GinkgoHelper()
	wc, err := f.ClientSet.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	cc := wc.Webhooks[0].ClientConfig
	gomega.Expect(cc.URL).NotTo(gomega.BeNil(), "the local cluster calls the webhook by URL")
	u, err := url.Parse(*cc.URL)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return u
}

func caBundle(ctx context.Context, f *framework.Framework, name string) []byte {
	ginkgo.GinkgoHelper()
	wc, err := f.ClientSet.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return wc.Webhooks[0].ClientConfig.CABundle
}

// servedCertificate is the certificate the webhook shows a new TLS client
// now, verified as the API server verifies it: against the caBundle, for
// the host of its URL.
func servedCertificate(u *url.URL, bundle []byte) *x509.Certificate {
	ginkgo.GinkgoHelper()
	pool := x509.NewCertPool()
	gomega.Expect(pool.AppendCertsFromPEM(bundle)).To(gomega.BeTrue(), "the caBundle holds no certificate")
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", u.Host, &tls.Config{RootCAs: pool, ServerName: u.Hostname()})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "a TLS client trusting the caBundle cannot connect to the webhook")
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

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
