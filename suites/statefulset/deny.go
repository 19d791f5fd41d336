package statefulset

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
)

// denialMessage is what the policy answers; specs look for it in errors.
const denialMessage = "was-harness: updates of PodGroups in this namespace are denied by the spec"

// podGroupUpdateDenial injects a write failure from OUTSIDE the
// implementation: a ValidatingAdmissionPolicy and its binding deny every
// UPDATE of scheduling.k8s.io podgroups in one namespace (the main resource
// only: the scheduler keeps writing podgroups/status). Both are cluster-scoped,
// so they are named after the namespace.
type podGroupUpdateDenial struct {
	f    *framework.Framework
	name string
	// probe is the PodGroup a dry-run update is tried on to see whether the
	// apiserver enforces the policy yet.
	probe string
}

// denyPodGroupUpdates installs the policy and waits until a dry-run update of
// PodGroup probe is denied. Cleanup lifts it (before the namespace goes: the
// PodGroups' finalizers are removed by updates).
func denyPodGroupUpdates(ctx context.Context, f *framework.Framework, probe string) *podGroupUpdateDenial {
	d := &podGroupUpdateDenial{f: f, name: "was-harness-deny-podgroup-updates-" + f.Namespace, probe: probe}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: d.name, Labels: map[string]string{framework.NamespaceLabel: "true"}},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{"scheduling.k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"podgroups"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: denialMessage}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: d.name, Labels: map[string]string{framework.NamespaceLabel: "true"}},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        d.name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": f.Namespace}},
			},
		},
	}
	ar := f.ClientSet.AdmissionregistrationV1()
	ginkgo.DeferCleanup(d.lift)
	_, err := ar.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "creating ValidatingAdmissionPolicy %s", d.name)
	_, err = ar.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{})
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "creating ValidatingAdmissionPolicyBinding %s", d.name)

	gomega.EventuallyWithOffset(1, ctx, d.probeUpdate).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(
		gomega.MatchError(gomega.ContainSubstring(denialMessage)),
		"waiting for the apiserver to enforce ValidatingAdmissionPolicy %s (a dry-run update of PodGroup %s must be denied)", d.name, probe)
	logf("PodGroup updates in %s are now denied by ValidatingAdmissionPolicy %s", f.Namespace, d.name)
	return d
}

// probeUpdate tries a dry-run update of the probe PodGroup.
func (d *podGroupUpdateDenial) probeUpdate(ctx context.Context) error {
	pgs := d.f.ClientSet.SchedulingV1beta1().PodGroups(d.f.Namespace)
	pg, err := pgs.Get(ctx, d.probe, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if pg.Labels == nil {
		pg.Labels = map[string]string{}
	}
	pg.Labels["was-harness.io/probe"] = fmt.Sprint(time.Now().UnixNano())
	_, err = pgs.Update(ctx, pg, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}

// lift deletes the binding and the policy and waits until a dry-run update of
// the probe PodGroup is admitted again (or the PodGroup is gone).
func (d *podGroupUpdateDenial) lift(ctx context.Context) {
	ar := d.f.ClientSet.AdmissionregistrationV1()
	if err := ar.ValidatingAdmissionPolicyBindings().Delete(ctx, d.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		ginkgo.Fail(fmt.Sprintf("deleting ValidatingAdmissionPolicyBinding %s: %v", d.name, err))
	}
	if err := ar.ValidatingAdmissionPolicies().Delete(ctx, d.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		ginkgo.Fail(fmt.Sprintf("deleting ValidatingAdmissionPolicy %s: %v", d.name, err))
	}
	gomega.Eventually(ctx, func(ctx context.Context) error {
		err := d.probeUpdate(ctx)
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}).WithTimeout(d.f.Timeouts.PodsBound).WithPolling(d.f.Timeouts.Poll).Should(gomega.Succeed(),
		"waiting for the apiserver to stop enforcing ValidatingAdmissionPolicy %s", d.name)
}
