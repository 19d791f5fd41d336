package install

import (
	"context"
	"fmt"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
)

// registrationPolicy is deploy/webhook-registration.yaml's policy.
const registrationPolicy = "was-webhook-ca-bundle-only"

var _ = ginkgo.Describe("Install of the reference implementation: the webhook's registration", framework.Harness, func() {
	f := framework.New("install-registration")

	// The webhook's account may update its ValidatingWebhookConfiguration
	// (RBAC, by name) to keep caBundle current; whoever takes over the
	// network-facing pod holds that account. Every write here is a server
	// dry run made as that account: admission runs, nothing is stored.
	ginkgo.It("lets the webhook's account change the caBundle of its ValidatingWebhookConfiguration and nothing else (server dry runs as that account)", func(ctx context.Context) {
		if framework.LocalCluster != nil {
			ginkgo.Skip("the policy ships in deploy/ (" + registrationPolicy + "), which the harness's local cluster does not install: its webhook has no self-signed CA to keep")
		}
		ds := requireInstalled(ctx, f, framework.ReferenceWebhook).daemonSet
		account := serviceaccount.MakeUsername(ds.Namespace, ds.Spec.Template.Spec.ServiceAccountName)
		name := rendered().webhookConfiguration().Name
		cfg := framework.RESTConfig()
		cfg.Impersonate = rest.ImpersonationConfig{UserName: account, Groups: serviceaccount.MakeGroupNames(ds.Namespace)}
		as, err := kubernetes.NewForConfig(cfg)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		configs := as.AdmissionregistrationV1().ValidatingWebhookConfigurations()

		current, err := configs.Get(ctx, name, metav1.GetOptions{})
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "reading ValidatingWebhookConfiguration %s as %s (deploy/rbac.yaml grants get)", name, account)
		try := func(change func(*admissionregistrationv1.ValidatingWebhookConfiguration)) error {
			c := current.DeepCopy()
			change(c)
			_, err := configs.Update(ctx, c, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		}

		ginkgo.By("the control: a new caBundle is admitted")
		gomega.Expect(try(func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			for i := range c.Webhooks {
				c.Webhooks[i].ClientConfig.CABundle = append(append([]byte{}, c.Webhooks[i].ClientConfig.CABundle...), '\n')
			}
		})).To(gomega.Succeed(), "%s must be able to keep the caBundle of %s current", account, name)

		denied := gomega.MatchError(gomega.ContainSubstring(registrationPolicy))
		for _, tc := range []struct {
			what   string
			change func(*admissionregistrationv1.ValidatingWebhookConfiguration)
		}{
			{"a rule for Secrets (a copy of every Secret written)", func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
				c.Webhooks[0].Rules = append(c.Webhooks[0].Rules, admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}},
				})
			}},
			{"no namespaceSelector (kube-system's writes denied too)", func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
				c.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{}
			}},
			{"clientConfig pointing off the cluster", func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
				c.Webhooks[0].ClientConfig.Service = nil
				c.Webhooks[0].ClientConfig.URL = ptr.To("https://webhook.example.invalid/validate")
			}},
			{"failurePolicy Ignore", func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
				c.Webhooks[0].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
			}},
			{"no matchConditions", func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
				c.Webhooks[0].MatchConditions = nil
			}},
			{"a second webhook", func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
				w := c.Webhooks[0].DeepCopy()
				w.Name = "second." + w.Name
				c.Webhooks = append(c.Webhooks, *w)
			}},
			{"a label", func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
				c.Labels = map[string]string{"was-harness.io/touched": "true"}
			}},
		} {
			ginkgo.By(fmt.Sprintf("denied: %s", tc.what))
			gomega.Expect(try(tc.change)).To(denied, "%s changing %s of %s: want a denial by ValidatingAdmissionPolicy %s", account, tc.what, name, registrationPolicy)
		}

		ginkgo.By("the policy matches that account only: the harness's own identity may make the same change")
		c := current.DeepCopy()
		c.Labels = map[string]string{"was-harness.io/touched": "true"}
		_, err = f.ClientSet.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, c, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), registrationPolicy) {
			ginkgo.Fail(fmt.Sprintf("ValidatingAdmissionPolicy %s denied the harness's own identity: it must match the webhook's account only: %v", registrationPolicy, err))
		}
	})
})
