package deployment

import (
	"context"
	"fmt"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// KEP-6276, Notes/Constraints/Caveats: "PodDisruptionBudgets are independent
// of spec.scheduling. Recreate rollouts and controller-driven scaling use
// direct pod deletion, not the eviction API, so PDBs do not block them.
// During voluntary evictions such as node drain, the eviction API respects
// PDBs independently of gang scheduling. disruptionMode only affects scheduler
// preemption decisions and does not influence the eviction API."
var _ = ginkgo.Describe("Deployment gangs and PodDisruptionBudgets", framework.KEP(6276),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment), func() {
		f := framework.New("deploy-pdb")

		ginkgo.It("scales down and rolls out a gang past a budget that allows no disruption, which refuses an eviction whatever the disruptionMode; an allowed eviction takes one pod, not the gang", framework.ID("D-I11"), func(ctx context.Context) {
			cfg := gang(nil)
			cfg.DisruptionMode = &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{All: &schedulingv1alpha3.WorkloadPodGroupAllDisruptionMode{}}
			d := create(ctx, recreate(f, "budget", 3, "100m").Obj(), cfg)
			app := apps.Deployment(d)
			start := apps.WaitForGang(ctx, f, app, 3, 3)
			expectDisruptionModeAll(ctx, f, d)

			// minAvailable is the replica count as a number, not maxUnavailable
			// 0: that one follows the Deployment's scale, so right after the
			// scale-down it would allow one disruption while the third pod is
			// still there, and a controller that evicts would get through.
			b := &budget{f: f, name: d.Name}
			b.create(ctx, d, 3)
			b.wait(ctx, 3, 0)

			ginkgo.By("an eviction of one pod of the disruptionMode-all gang is refused by the budget (429), and nothing of the gang goes")
			victim := start.Pods[0]
			expectBudgetRefusal(b.evict(ctx, victim.Name), victim.Name)
			now := apps.Read(ctx, f, app)
			apps.ExpectPodsUndisturbed(now, start)
			gomega.Expect(now.Terminating).To(gomega.BeEmpty(), "a refused eviction left pods terminating: %s", now)

			ginkgo.By("scaling to 2: the budget (minAvailable 3) does not block the controller's pod deletion")
			apps.Scale(ctx, f, app, 2)
			scaled := b.waitGang(ctx, app, 2, "the scale-down to 2", nil)
			kept := start.WithPods(scaled.PodNames(nil)...)
			gomega.Expect(kept.Pods).To(gomega.HaveLen(2), "a scale-down removes pods; it replaced some: before %s, now %s", start, scaled)
			apps.ExpectPodsUndisturbed(scaled, kept)

			ginkgo.By("a Recreate rollout to revision 2: the budget does not block the old revision's pods going")
			old := scaled.PodGroups[0].Name
			_, err := framework.Intent.UpdateDeployment(ctx, f.Namespace, d.Name, func(d *appsv1.Deployment, _ **framework.DeploymentScheduling) {
				builder.SetRevision(&d.Spec.Template, "2")
			})
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "changing the pod template to revision 2")
			rolled := b.waitGang(ctx, app, 2, "the Recreate rollout to revision 2",
				gomega.HaveField("Pods", gomega.HaveEach(gomega.HaveField("Group", gomega.Not(gomega.Equal(old))))))
			for _, p := range rolled.Pods {
				gomega.Expect(scaled.PodUIDs()).NotTo(gomega.ContainElement(p.UID), "pod %s of the old revision survived the rollout: %s", p.Name, rolled)
			}

			ginkgo.By("the budget allows one disruption (minAvailable 1 of 2): an eviction removes that pod only, and the gang keeps its PodGroup")
			b.setMinAvailable(ctx, 1)
			b.wait(ctx, 2, 1)
			before := apps.Read(ctx, f, app)
			victim = before.Pods[0]
			gomega.Expect(b.evict(ctx, victim.Name)).To(gomega.Succeed(), "evicting pod %s with one disruption allowed", victim.Name)
			after := b.waitGang(ctx, app, 2, "the evicted pod's replacement",
				gomega.HaveField("Pods", gomega.HaveEach(gomega.HaveField("UID", gomega.Not(gomega.Equal(victim.UID))))))
			apps.ExpectPodsUndisturbed(after, before.WithPods(before.PodNames(func(p apps.Member) bool { return p.Name != victim.Name })...))
			apps.ExpectSameObjects(after, before)
		})
	})

// expectDisruptionModeAll asserts the gang's Workload template and PodGroup
// carry disruptionMode all: the refusal that follows is then the budget's,
// against a gang that asks to be disrupted whole.
func expectDisruptionModeAll(ctx context.Context, f *framework.Framework, d *appsv1.Deployment) {
	ginkgo.GinkgoHelper()
	want := schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}}
	w := theWorkload(ctx, f, d)
	gomega.Expect(w.Spec.PodGroupTemplates).To(gomega.HaveLen(1), "Workload %s", w.Name)
	gomega.Expect(w.Spec.PodGroupTemplates[0].DisruptionMode).To(gomega.HaveValue(gomega.Equal(want)), "Workload %s template disruptionMode", w.Name)
	pgs := podGroups(ctx, f)
	gomega.Expect(pgs).To(gomega.HaveLen(1), "the gang Deployment must have one PodGroup")
	gomega.Expect(pgs[0].Spec.DisruptionMode).To(gomega.HaveValue(gomega.Equal(want)), "PodGroup %s disruptionMode", pgs[0].Name)
}

// expectBudgetRefusal asserts err is the eviction API's refusal for want of
// budget: 429 with the DisruptionBudget cause.
func expectBudgetRefusal(err error, pod string) {
	ginkgo.GinkgoHelper()
	gomega.Expect(apierrors.IsTooManyRequests(err)).To(gomega.BeTrue(), "evicting pod %s under a budget that allows no disruption: want 429 TooManyRequests, got %v", pod, err)
	var causes []metav1.CauseType
	if s, ok := err.(apierrors.APIStatus); ok && s.Status().Details != nil {
		for _, c := range s.Status().Details.Causes {
			causes = append(causes, c.Type)
		}
	}
	gomega.Expect(causes).To(gomega.ContainElement(metav1.CauseType(policyv1.DisruptionBudgetCause)), "the 429 must be the budget's: %v", err)
}

// budget is the spec's PodDisruptionBudget over the Deployment's pods.
type budget struct {
	f    *framework.Framework
	name string
}

func (b *budget) create(ctx context.Context, d *appsv1.Deployment, minAvailable int32) {
	ginkgo.GinkgoHelper()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: b.name, Namespace: b.f.Namespace},
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:     d.Spec.Selector.DeepCopy(),
			MinAvailable: ptr.To(intstr.FromInt32(minAvailable)),
		},
	}
	_, err := b.f.ClientSet.PolicyV1().PodDisruptionBudgets(b.f.Namespace).Create(ctx, pdb, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating PodDisruptionBudget %s", b.name)
}

func (b *budget) setMinAvailable(ctx context.Context, minAvailable int32) {
	ginkgo.GinkgoHelper()
	pdbs := b.f.ClientSet.PolicyV1().PodDisruptionBudgets(b.f.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pdb, err := pdbs.Get(ctx, b.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(minAvailable))
		_, err = pdbs.Update(ctx, pdb, metav1.UpdateOptions{})
		return err
	})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "setting PodDisruptionBudget %s minAvailable to %d", b.name, minAvailable)
}

// wait waits until the disruption controller has observed the budget's
// latest spec and counts healthy pods with allowed disruptions: before
// that, the eviction API refuses every eviction whatever the budget says.
func (b *budget) wait(ctx context.Context, healthy, allowed int32) {
	ginkgo.GinkgoHelper()
	want := fmt.Sprintf("observed, %d healthy, %d disruptions allowed", healthy, allowed)
	gomega.Eventually(ctx, b.status).WithTimeout(b.f.Timeouts.PodsBound).WithPolling(b.f.Timeouts.Poll).
		Should(gomega.Equal(want), "waiting for PodDisruptionBudget %s", b.name)
}

// status sums up the budget's status in the words of wait.
func (b *budget) status(ctx context.Context) (string, error) {
	pdb, err := b.f.ClientSet.PolicyV1().PodDisruptionBudgets(b.f.Namespace).Get(ctx, b.name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	st := pdb.Status
	if st.ObservedGeneration < pdb.Generation {
		return fmt.Sprintf("generation %d, observed %d", pdb.Generation, st.ObservedGeneration), nil
	}
	return fmt.Sprintf("observed, %d healthy, %d disruptions allowed", st.CurrentHealthy, st.DisruptionsAllowed), nil
}

// evict asks the eviction API (policy/v1) to evict pod, as a node drain does.
func (b *budget) evict(ctx context.Context, pod string) error {
	return b.f.ClientSet.CoreV1().Pods(b.f.Namespace).EvictV1(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: b.f.Namespace},
	})
}

// waitGang waits until a runs as a gang of n at minCount n with no pod
// terminating (and matches also, when given), after what. A failure shows the
// budget's status and the namespace's Warning events: a controller that
// evicts instead of deleting is refused there (FailedDelete), and says so.
func (b *budget) waitGang(ctx context.Context, a apps.App, n int32, what string, also gomega.OmegaMatcher) apps.State {
	ginkgo.GinkgoHelper()
	m := gomega.SatisfyAll(apps.Gang(n, int(n)), gomega.HaveField("Terminating", gomega.BeEmpty()))
	if also != nil {
		m = gomega.SatisfyAll(m, also)
	}
	var last apps.State
	gomega.Eventually(ctx, func(ctx context.Context) apps.State {
		last = apps.Read(ctx, b.f, a)
		return last
	}).WithTimeout(b.f.Timeouts.PodsBound).WithPolling(b.f.Timeouts.Poll).Should(m, func() string {
		st, err := b.status(ctx)
		if err != nil {
			st = err.Error()
		}
		return fmt.Sprintf("waiting for %s after %s: a gang of %d at minCount %d, no pod terminating\nPodDisruptionBudget %s: %s\nWarning events:\n%s",
			a, what, n, n, b.name, st, b.warnings(ctx))
	})
	return last
}

// warnings lists the namespace's Warning events, one a line.
func (b *budget) warnings(ctx context.Context) string {
	list, err := b.f.ClientSet.CoreV1().Events(b.f.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, fmt.Sprintf("  %s %s/%s: %s (x%d)", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message, e.Count))
	}
	return strings.Join(out, "\n")
}
