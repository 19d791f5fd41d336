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

// updateDenial injects a write failure from OUTSIDE the implementation: a
// ValidatingAdmissionPolicy and its binding deny every UPDATE of one
// scheduling.k8s.io resource (workloads or podgroups) in one namespace (the
// main resource only: the scheduler keeps writing podgroups/status). Both are
// cluster-scoped, so they are named after the resource and the namespace.
type updateDenial struct {
	f        *framework.Framework
	name     string
	resource string
	message  string
	// probe tries a dry-run update of one object of the resource, to see
	// whether the apiserver enforces the policy yet.
	probe func(ctx context.Context) error
}

// denyPodGroupUpdates denies updates of PodGroups; probe names one.
func denyPodGroupUpdates(ctx context.Context, f *framework.Framework, probe string) *updateDenial {
	ginkgo.GinkgoHelper()
	pgs := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace)
	return denyUpdates(ctx, f, "podgroups", func(ctx context.Context) error {
		pg, err := pgs.Get(ctx, probe, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pg.Labels = touched(pg.Labels)
		_, err = pgs.Update(ctx, pg, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
}

// denyWorkloadUpdates denies updates of Workloads; probe names one.
func denyWorkloadUpdates(ctx context.Context, f *framework.Framework, probe string) *updateDenial {
	ginkgo.GinkgoHelper()
	ws := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace)
	return denyUpdates(ctx, f, "workloads", func(ctx context.Context) error {
		w, err := ws.Get(ctx, probe, metav1.GetOptions{})
		if err != nil {
			return err
		}
		w.Labels = touched(w.Labels)
		_, err = ws.Update(ctx, w, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
}

func touched(labels map[string]string) map[string]string {
	if labels == nil {
		labels = map[string]string{}
	}
	labels["was-harness.io/probe"] = fmt.Sprint(time.Now().UnixNano())
	return labels
}

// denyUpdates installs the policy for resource and waits until probe is
// denied. Cleanup lifts it (before the namespace goes: the PodGroups'
// finalizers are removed by updates).
func denyUpdates(ctx context.Context, f *framework.Framework, resource string, probe func(context.Context) error) *updateDenial {
	ginkgo.GinkgoHelper()
	d := &updateDenial{f: f, name: "was-harness-deny-" + resource + "-updates-" + f.Namespace, resource: resource, probe: probe,
		message: "was-harness: updates of " + resource + " in this namespace are denied by the spec"}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: d.name, Labels: map[string]string{framework.NamespaceLabel: "true"}},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
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
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating ValidatingAdmissionPolicy %s", d.name)
	_, err = ar.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating ValidatingAdmissionPolicyBinding %s", d.name)

	gomega.Eventually(ctx, d.probe).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(
		gomega.MatchError(gomega.ContainSubstring(d.message)),
		"waiting for the apiserver to enforce ValidatingAdmissionPolicy %s (a dry-run update must be denied)", d.name)
	logf("updates of %s in %s are now denied by ValidatingAdmissionPolicy %s", resource, f.Namespace, d.name)
	return d
}

// lift deletes the binding and the policy and waits until a dry-run update of
// the probe is admitted again (or its object is gone).
func (d *updateDenial) lift(ctx context.Context) {
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
