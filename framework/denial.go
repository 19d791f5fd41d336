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

// Denial injects a write failure from OUTSIDE the implementation: a
// ValidatingAdmissionPolicy and its binding deny one operation on one
// scheduling.k8s.io resource (the main resource only: the scheduler keeps
// writing podgroups/status) in the spec's namespace. Both are cluster-scoped,
// so they are named after the resource, the operation and the namespace, and
// specs running side by side do not meet.
type Denial struct {
	f       *Framework
	name    string
	message string
	// probe tries a dry-run write of the resource, to see whether the
	// apiserver enforces the policy yet.
	probe func(ctx context.Context) error
}

// DenyWrites installs the policy denying op on resource in f's namespace and
// waits until probe (a dry-run of such a write) is denied. Cleanup lifts it
// (before the namespace goes: the PodGroups' finalizers are removed by
// updates).
func DenyWrites(ctx context.Context, f *Framework, resource string, op admissionregistrationv1.OperationType, probe func(context.Context) error) *Denial {
	ginkgo.GinkgoHelper()
	verb := strings.ToLower(string(op))
	d := &Denial{f: f, name: "was-harness-deny-" + resource + "-" + verb + "s-" + f.Namespace, probe: probe,
		message: "was-harness: " + verb + "s of " + resource + " in this namespace are denied by the spec"}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: d.name, Labels: map[string]string{NamespaceLabel: "true"}},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{op},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{"scheduling.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{resource},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: d.message}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: d.name, Labels: map[string]string{NamespaceLabel: "true"}},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        d.name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": f.Namespace}},
			},
		},
	}
	ar := f.ClientSet.AdmissionregistrationV1()
	ginkgo.DeferCleanup(d.Lift)
	_, err := ar.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating ValidatingAdmissionPolicy %s", d.name)
	_, err = ar.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating ValidatingAdmissionPolicyBinding %s", d.name)

	gomega.Eventually(ctx, d.probe).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(
		gomega.MatchError(gomega.ContainSubstring(d.message)),
		"waiting for the apiserver to enforce ValidatingAdmissionPolicy %s (a dry-run %s must be denied)", d.name, verb)
	ginkgo.GinkgoWriter.Printf("%ss of %s in %s are now denied by ValidatingAdmissionPolicy %s\n", verb, resource, f.Namespace, d.name)
	return d
}

// Lift deletes the binding and the policy and waits until the probe is
// admitted again (or its object is gone). Calling it twice is harmless.
func (d *Denial) Lift(ctx context.Context) {
	ar := d.f.ClientSet.AdmissionregistrationV1()
	if err := ar.ValidatingAdmissionPolicyBindings().Delete(ctx, d.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		ginkgo.Fail(fmt.Sprintf("deleting ValidatingAdmissionPolicyBinding %s: %v", d.name, err))
	}
	if err := ar.ValidatingAdmissionPolicies().Delete(ctx, d.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		ginkgo.Fail(fmt.Sprintf("deleting ValidatingAdmissionPolicy %s: %v", d.name, err))
	}
	gomega.Eventually(ctx, func(ctx context.Context) error {
		err := d.probe(ctx)
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}).WithTimeout(d.f.Timeouts.PodsBound).WithPolling(d.f.Timeouts.Poll).Should(gomega.Succeed(),
		"waiting for the apiserver to stop enforcing ValidatingAdmissionPolicy %s", d.name)
}
