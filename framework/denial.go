package framework

import (
	"context"
	"fmt"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Denial injects a write failure from OUTSIDE the implementation, on
// scheduling.k8s.io resources in the spec's namespace (the main resources
// only: the scheduler keeps writing podgroups/status). Two kinds:
//   - DenyWrites: a ValidatingAdmissionPolicy refuses one operation (403/422,
//     the apiserver's answer to a write it will not accept);
//   - FailWrites: a validating webhook that cannot be called, with
//     failurePolicy Fail, makes the apiserver answer 500 InternalError (the
//     class of error a client gets while etcd is unavailable), and nothing
//     the implementation's informers watch through restarts.
//
// The objects are cluster-scoped, so they are named after what they refuse
// and the namespace, and specs running side by side do not meet.
type Denial struct {
	f    *Framework
	what string
	// probe tries a dry-run write, to see whether the apiserver enforces the
	// denial yet; denied says whether its error is the denial's.
	probe  func(ctx context.Context) error
	denied func(error) bool
	remove func(ctx context.Context) error
}

// DenyWrites installs the policy denying op on resource in f's namespace and
// waits until probe (a dry-run of such a write) is denied. Cleanup lifts it
// (before the namespace goes: the PodGroups' finalizers are removed by
// updates).
func DenyWrites(ctx context.Context, f *Framework, resource string, op admissionregistrationv1.OperationType, probe func(context.Context) error) *Denial {
	ginkgo.GinkgoHelper()
	verb := strings.ToLower(string(op))
	name := "was-harness-deny-" + resource + "-" + verb + "s-" + f.Namespace
	message := "was-harness: " + verb + "s of " + resource + " in this namespace are denied by the spec"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{NamespaceLabel: "true"}},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: schedulingRule([]string{resource}, []admissionregistrationv1.OperationType{op}),
				}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: message}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{NamespaceLabel: "true"}},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: namespaceOnly(f)},
		},
	}
	ar := f.ClientSet.AdmissionregistrationV1()
	d := &Denial{f: f, what: "ValidatingAdmissionPolicy " + name, probe: probe,
		denied: func(err error) bool { return err != nil && strings.Contains(err.Error(), message) },
		remove: func(ctx context.Context) error {
			if err := ar.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting ValidatingAdmissionPolicyBinding %s: %w", name, err)
			}
			if err := ar.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting ValidatingAdmissionPolicy %s: %w", name, err)
			}
			return nil
		}}
	ginkgo.DeferCleanup(d.Lift)
	_, err := ar.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating ValidatingAdmissionPolicy %s", name)
	_, err = ar.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating ValidatingAdmissionPolicyBinding %s", name)
	d.waitEnforced(ctx, verb+"s of "+resource)
	return d
}

// unreachableWebhookURL is where FailWrites' webhook points: port 1 of the
// apiserver's own loopback, where nothing listens, so the call is refused at
// once (a dropped connection would also fail, after timeoutSeconds).
const unreachableWebhookURL = "https://127.0.0.1:1/was-harness-unavailable"

// FailWrites makes every ops write of resources (scheduling.k8s.io) in f's
// namespace fail with 500 InternalError, the answer of an apiserver whose
// storage is unavailable, and waits until probe (a dry-run of such a write)
// fails so. Unlike a restart of etcd or kube-apiserver it breaks no watch:
// the implementation's informers see no relist, so what converges after
// Lift is the implementation's own retry of the failed writes. Cleanup lifts
// it.
func FailWrites(ctx context.Context, f *Framework, resources []string, ops []admissionregistrationv1.OperationType, probe func(context.Context) error) *Denial {
	ginkgo.GinkgoHelper()
	name := "was-harness-fail-" + strings.Join(resources, "-") + "-" + f.Namespace
	webhook := "unavailable.was-harness.io"
	config := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{NamespaceLabel: "true"}},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    webhook,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(unreachableWebhookURL)},
			Rules:                   []admissionregistrationv1.RuleWithOperations{schedulingRule(resources, ops)},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector:       namespaceOnly(f),
			TimeoutSeconds:          ptr.To[int32](2),
		}},
	}
	webhooks := f.ClientSet.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	d := &Denial{f: f, what: "ValidatingWebhookConfiguration " + name + " (a webhook that cannot be called)", probe: probe,
		denied: func(err error) bool { return apierrors.IsInternalError(err) && strings.Contains(err.Error(), webhook) },
		remove: func(ctx context.Context) error {
			if err := webhooks.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting ValidatingWebhookConfiguration %s: %w", name, err)
			}
			return nil
		}}
	ginkgo.DeferCleanup(d.Lift)
	_, err := webhooks.Create(ctx, config, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating ValidatingWebhookConfiguration %s", name)
	d.waitEnforced(ctx, fmt.Sprintf("%v of %v", ops, resources))
	return d
}

func schedulingRule(resources []string, ops []admissionregistrationv1.OperationType) admissionregistrationv1.RuleWithOperations {
	return admissionregistrationv1.RuleWithOperations{
		Operations: ops,
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"scheduling.k8s.io"}, APIVersions: []string{"*"}, Resources: resources},
	}
}

func namespaceOnly(f *Framework) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": f.Namespace}}
}

func (d *Denial) waitEnforced(ctx context.Context, what string) {
	ginkgo.GinkgoHelper()
	var last error
	gomega.Eventually(ctx, func(ctx context.Context) bool {
		last = d.probe(ctx)
		return d.denied(last)
	}).WithTimeout(d.f.Timeouts.PodsBound).WithPolling(d.f.Timeouts.Poll).Should(gomega.BeTrue(),
		func() string {
			return fmt.Sprintf("waiting for the apiserver to enforce %s (a dry-run write must fail by it; last answer: %v)", d.what, last)
		})
	ginkgo.GinkgoWriter.Printf("%s in %s now fail by %s\n", what, d.f.Namespace, d.what)
}

// Lift removes the denial and waits until the probe is admitted again (or
// its object is gone). Calling it twice is harmless.
func (d *Denial) Lift(ctx context.Context) {
	ginkgo.GinkgoHelper()
	if err := d.remove(ctx); err != nil {
		ginkgo.Fail(err.Error())
	}
	gomega.Eventually(ctx, func(ctx context.Context) error {
		err := d.probe(ctx)
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}).WithTimeout(d.f.Timeouts.PodsBound).WithPolling(d.f.Timeouts.Poll).Should(gomega.Succeed(),
		"waiting for the apiserver to stop enforcing %s", d.what)
}
