package statefulset

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// S-P9's PodGroup half. KEP-6277, Monitoring Requirements: "Event Reason:
// WorkloadCreationFailed — emitted when Workload or PodGroup creation
// fails"; "Event Reason: PodGroupCreated — emitted when the runtime PodGroup
// is successfully created". The Workload half (the API not served) is the
// version-skew spec's. Here the Workload is created and only the PodGroup's
// creation fails: the apiserver denies PodGroup creates in the namespace
// (a ValidatingAdmissionPolicy, from outside the implementation).
//
// The metric is named for Workload failures ("Check statefulset_workload_
// creation_errors_total for persistent Workload creation failures"), while
// its SLI reads "StatefulSets with spec.scheduling are not getting their
// objects": whether a PodGroup failure counts is the implementation's
// reading, recorded where its metrics can be read, not judged.
var _ = ginkgo.Describe("StatefulSet events when its PodGroup cannot be created", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("sts-pg-denied")

		ginkgo.It("records WorkloadCreated, then WorkloadCreationFailed while PodGroup creates fail, creates no pod, and PodGroupCreated once they succeed", framework.ID("S-P9"), func(ctx context.Context) {
			pgs := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace)
			probe := builder.PodGroup("probe", f.Namespace).Gang(1).Obj()
			denial := framework.DenyWrites(ctx, f, "podgroups", admissionregistrationv1.Create, func(ctx context.Context) error {
				_, err := pgs.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				return err
			})
			metricsURL, metricsBefore := creationErrorsIfReachable(ctx)

			set := create(ctx, parallel(f, "denied", 2, "100m").Obj(), gang())
			a := apps.StatefulSet(set)

			ginkgo.By("the Workload is created (WorkloadCreated), the PodGroup's creation fails (WorkloadCreationFailed)")
			gomega.Eventually(ctx, func(ctx context.Context) ([]string, error) { return apps.EventReasons(ctx, f, a) }).
				WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).
				Should(gomega.ContainElements("WorkloadCreated", "WorkloadCreationFailed"),
					"waiting for WorkloadCreated and WorkloadCreationFailed events on StatefulSet %s", set.Name)

			ginkgo.By("no pod exists and no PodGroup: pods without their PodGroup would bypass the gang")
			gomega.Consistently(ctx, func(ctx context.Context) (string, error) {
				pods, err := framework.ListPods(ctx, apps.Pods(f, a))
				return fmt.Sprintf("pods=%d podgroups=%d", len(pods), len(apps.ListPodGroups(ctx, f))), err
			}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal("pods=0 podgroups=0"))
			if metricsURL != "" {
				after, err := framework.ReadCounter(ctx, metricsURL, framework.StatefulSetCreationErrors)
				gomega.Expect(err).NotTo(gomega.HaveOccurred())
				// Other specs' failures may add to it too: the reading says
				// what was seen, not why.
				reading := framework.StatefulSetCreationErrors + " rose while PodGroup creates were denied"
				if after <= metricsBefore {
					reading = framework.StatefulSetCreationErrors + " did not rise while PodGroup creates were denied (it counts Workload failures only)"
				}
				framework.RecordReading(reading)
			}

			denial.Lift(ctx)
			ginkgo.By("PodGroup creates admitted again: PodGroupCreated, and the gang runs in it")
			apps.WaitForGang(ctx, f, a, 2, 2)
			gomega.Eventually(ctx, func(ctx context.Context) ([]string, error) { return apps.EventReasons(ctx, f, a) }).
				WithTimeout(f.Timeouts.Namespace).WithPolling(f.Timeouts.Poll).Should(gomega.ContainElement("PodGroupCreated"),
				"waiting for a PodGroupCreated event on StatefulSet %s", set.Name)
		})
	})

// creationErrorsIfReachable reads the metric where the implementation's
// metrics can be read ("" and no skip where they cannot: the events are
// this spec's subject).
func creationErrorsIfReachable(ctx context.Context) (string, float64) {
	url := framework.ImplementationMetricsURLIfAny()
	if url == "" {
		return "", 0
	}
	v, err := framework.ReadCounter(ctx, url, framework.StatefulSetCreationErrors)
	if err != nil {
		ginkgo.GinkgoWriter.Printf("reading %s at %s: %v; the reading is not recorded\n", framework.StatefulSetCreationErrors, url, err)
		return "", 0
	}
	return url, v
}
