package statefulset

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
)

// kube-scheduler's PodGroup SLIs (KEP-4671), which KEP-6277's Monitoring
// Requirements name for PodGroups owned by StatefulSets. In 1.37 both carry
// the labels result (scheduled, unschedulable, waiting_on_preemption, error)
// and profile, and exist only with GenericWorkload on in kube-scheduler.
const (
	podGroupAttempts = "scheduler_podgroup_schedule_attempts_total"
	podGroupDuration = "scheduler_podgroup_scheduling_attempt_duration_seconds"
)

// notEnforced is KEP-6277's reading of a PodGroup the scheduler records no
// attempt for.
const notEnforced = `KEP-6277: "a PodGroup that exists while scheduler_podgroup_schedule_attempts_total records no attempts for it. ` +
	`That means the scheduler is not enforcing the group at all (missing GenericWorkload)"`

// The counters are cluster-wide and labelled by result and profile only, not
// by PodGroup: the spec is Serial, and judges each rise from a reading taken
// before its StatefulSet was created, once that StatefulSet's pods exist.
var _ = ginkgo.Describe("StatefulSet scheduler SLIs", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("sts-sli")

		ginkgo.It("counts a placed gang's attempt as scheduled and an unplaceable one's as unschedulable, in the attempts counter and the duration histogram",
			framework.ID("S-I19"), framework.Serial, func(ctx context.Context) {
				sched := framework.ReachSchedulerMetrics(ctx)
				ginkgo.By("reading kube-scheduler's metrics at " + sched.Where)

				before := scrape(ctx, sched)
				ginkgo.By("a gang of 2 pods of 100m CPU, which fits")
				placed := create(ctx, parallel(f, "placed", 2, "100m").Obj(), gang())
				apps.WaitForRunning(ctx, f, apps.StatefulSet(placed), 2)
				pg := expectAttempt(ctx, f, sched, before, placed, "scheduled")
				framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{
					ClientSet: f.ClientSet, Namespace: f.Namespace, Name: pg,
					Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue,
				})

				// Twice the largest node's CPU: no pod fits anywhere, and no
				// preemption can make room, so the result is unschedulable
				// rather than waiting_on_preemption.
				fit := framework.NodeSize(ctx, f)
				huge := fit.MaxAllocatable.DeepCopy()
				huge.Add(fit.MaxAllocatable)
				before = scrape(ctx, sched)
				ginkgo.By(fmt.Sprintf("a gang of 2 pods of %s CPU, which no node has", huge.String()))
				stuck := create(ctx, parallel(f, "stuck", 2, huge.String()).Obj(), gang())
				apps.WaitForPodsCreated(ctx, f, apps.StatefulSet(stuck), 2)
				pg = expectAttempt(ctx, f, sched, before, stuck, "unschedulable")
				framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{
					ClientSet: f.ClientSet, Namespace: f.Namespace, Name: pg,
					Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse, Reason: "Unschedulable",
				})
				framework.ExpectNoPodBound(ctx, apps.Pods(f, apps.StatefulSet(stuck)))
			})
	})

// scrape reads the scheduler's metrics now, failing the spec if it cannot.
func scrape(ctx context.Context, sched *framework.SchedulerMetrics) framework.Scrape {
	ginkgo.GinkgoHelper()
	s, err := sched.Read(ctx)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "reading kube-scheduler's metrics at %s", sched.Where)
	return s
}

// expectAttempt waits until, since before, kube-scheduler has counted at
// least one PodGroup scheduling attempt of result under the profile set's
// pods name, in both the attempts counter and the duration histogram; it
// returns the name of set's PodGroup.
func expectAttempt(ctx context.Context, f *framework.Framework, sched *framework.SchedulerMetrics, before framework.Scrape,
	set *appsv1.StatefulSet, result string) string {
	ginkgo.GinkgoHelper()
	a := apps.StatefulSet(set)
	w, pg := objectsOf(ctx, f, a)
	pods, err := framework.ListPods(ctx, apps.Pods(f, a))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(pods).NotTo(gomega.BeEmpty())
	labels := map[string]string{"result": result, "profile": pods[0].Spec.SchedulerName}
	var owners []string
	for _, o := range pg.OwnerReferences {
		owners = append(owners, o.Kind+"/"+o.Name)
	}
	series := fmt.Sprintf("{profile=%q,result=%q}", labels["profile"], result)
	logf("PodGroup %s (Workload %s, owners %v): waiting for %s%s to rise", pg.Name, w.Name, owners, podGroupAttempts, series)

	var now framework.Scrape
	rise := func(ctx context.Context) error {
		var err error
		if now, err = sched.Read(ctx); err != nil {
			return err
		}
		attempts := now.Counter(podGroupAttempts, labels) - before.Counter(podGroupAttempts, labels)
		observed := now.HistogramCount(podGroupDuration, labels) - before.HistogramCount(podGroupDuration, labels)
		if attempts < 1 || observed < 1 {
			return fmt.Errorf("since StatefulSet %s was created, %s%s rose by %v and %s_count%s by %v (want >= 1 each)",
				set.Name, podGroupAttempts, series, attempts, podGroupDuration, series, observed)
		}
		logf("%s%s rose by %v, %s_count%s by %v; all series now: %v; %v", podGroupAttempts, series, attempts, podGroupDuration, series, observed,
			now.Series(podGroupAttempts), now.Series(podGroupDuration))
		return nil
	}
	gomega.Eventually(ctx, rise).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.Succeed(),
		func() string {
			return fmt.Sprintf("kube-scheduler (%s) counted no %s attempt of PodGroup %s, which exists with %d pods; %s now: %v; %s now: %v. %s",
				sched.Where, result, pg.Name, len(pods), podGroupAttempts, now.Series(podGroupAttempts), podGroupDuration, now.Series(podGroupDuration), notEnforced)
		})
	return pg.Name
}
