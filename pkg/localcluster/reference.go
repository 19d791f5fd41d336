package localcluster

import (
	"context"
	"fmt"
	"os"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/controllers/admission"
	"github.com/workload-aware/apps-harness/controllers/config"
	"github.com/workload-aware/apps-harness/api/intent"
)

// WebhookConfigurationName is the ValidatingWebhookConfiguration the harness
// registers for the reference implementation's admission side.
const WebhookConfigurationName = "was-harness-apps-admission"

// installReferenceRBAC applies controllers/config/rbac.yaml, the same
// manifests a user installs, so the reference implementation runs with
// exactly the permissions the KEPs list (RBAC on, not bypassed).
func (c *Cluster) installReferenceRBAC(ctx context.Context) error {
	client, err := c.adminClient()
	if err != nil {
		return err
	}
	rbac, err := config.DecodeRBAC()
	if err != nil {
		return err
	}
	rb := client.RbacV1()
	for i := range rbac.ClusterRoles {
		if _, err := rb.ClusterRoles().Create(ctx, &rbac.ClusterRoles[i], metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ClusterRole %s: %w", rbac.ClusterRoles[i].Name, err)
		}
	}
	for i := range rbac.ClusterRoleBindings {
		if _, err := rb.ClusterRoleBindings().Create(ctx, &rbac.ClusterRoleBindings[i], metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ClusterRoleBinding %s: %w", rbac.ClusterRoleBindings[i].Name, err)
		}
	}
	for i := range rbac.Roles {
		r := &rbac.Roles[i]
		if _, err := rb.Roles(r.Namespace).Create(ctx, r, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Role %s/%s: %w", r.Namespace, r.Name, err)
		}
	}
	for i := range rbac.RoleBindings {
		r := &rbac.RoleBindings[i]
		if _, err := rb.RoleBindings(r.Namespace).Create(ctx, r, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating RoleBinding %s/%s: %w", r.Namespace, r.Name, err)
		}
	}
	return nil
}

// WebhookConfiguration is the registration of the reference admission
// webhook at url, trusted through caBundle. Only requests that can carry the
// scheduling intent reach it (matchConditions), so ordinary Deployments do not
// depend on the webhook being up.
func WebhookConfiguration(url string, caBundle []byte) *admissionregistrationv1.ValidatingWebhookConfiguration {
	carries := func(obj string) string {
		return fmt.Sprintf("(%s != null && has(%s.metadata.annotations) && ('%s' in %s.metadata.annotations || '%s' in %s.metadata.annotations))",
			obj, obj, intent.DeploymentAnnotation, obj, intent.StatefulSetAnnotation, obj)
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: WebhookConfigurationName},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "apps.scheduling.was-harness.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			TimeoutSeconds:          ptr.To[int32](5),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{"apps"}, APIVersions: []string{"v1"},
					Resources: []string{"deployments", "deployments/scale", "statefulsets"},
				},
			}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{
				Name:       "may-carry-scheduling-intent",
				Expression: "(has(request.subResource) && request.subResource == 'scale') || " + carries("object") + " || " + carries("oldObject"),
			}},
		}},
	}
}

// registerWebhook points the apiserver at the was-webhook component.
func (c *Cluster) registerWebhook(ctx context.Context) error {
	client, err := c.adminClient()
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(c.paths.crt("ca"))
	if err != nil {
		return err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d%s", c.ports.wasWebhookServing, admission.Path)
	wc := WebhookConfiguration(url, ca)
	api := client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := api.Create(ctx, wc, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		existing, err := api.Get(ctx, wc.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		wc.ResourceVersion = existing.ResourceVersion
		_, err = api.Update(ctx, wc, metav1.UpdateOptions{})
		return err
	} else if err != nil {
		return fmt.Errorf("registering the reference webhook: %w", err)
	}
	return nil
}
