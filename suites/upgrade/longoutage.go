package upgrade

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// upstreamRetryBudget is about how long the upstream Deployment controller
// retries a failing sync before it drops the key: 15 retries from 5 ms,
// doubling (k8s.io/kubernetes/pkg/controller/deployment, maxRetries).
const upstreamRetryBudget = 164 * time.Second

var longOutage = flag.String("long-outage", os.Getenv("LONG_OUTAGE"),
	"how long the long-outage spec denies Workload creates, at least 3m (env LONG_OUTAGE); empty skips it")

// A Workload that cannot be written for longer than a controller's retry
// budget: an implementation built on the upstream Deployment controller
// inherits its habit of dropping a key after 15 failed syncs, and then
// nothing syncs the Deployment again for hours. The KEP asks for retries
// with backoff and convergence once the write succeeds (D-P5's promise; D-P5
// itself takes the API away by an apiserver restart, whose relist re-enqueues
// every Deployment and hides the bug). The denial is a namespaced admission
// policy, so no component restarts and the spec can run beside others.
var _ = ginkgo.Describe("A Workload denied for longer than the controllers retry", ginkgo.Label("LongOutage"),
	framework.KEP(6276), framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment), func() {
		f := framework.New("long-outage")

		ginkgo.It("still converges: a gang Deployment gets its Workload and all its pods once Workload creates are admitted again", func(ctx context.Context) {
			if *longOutage == "" {
				ginkgo.Skip("runs only when asked (several minutes): make e2e LABEL_FILTER=LongOutage LONG_OUTAGE=4m (or --long-outage)")
			}
			outage, err := time.ParseDuration(*longOutage)
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "--long-outage / LONG_OUTAGE: want a duration such as 4m")
			gomega.Expect(outage).To(gomega.BeNumerically(">", upstreamRetryBudget+15*time.Second),
				"--long-outage / LONG_OUTAGE %s: it must outlast the upstream Deployment controller's retries (about %s)", outage, upstreamRetryBudget)

			workloads := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace)
			probe := builder.Workload("probe", f.Namespace).PodGroupTemplate(builder.PodGroupTemplate("pods")).Obj()
			denial := framework.DenyWrites(ctx, f, "workloads", admissionregistrationv1.Create, func(ctx context.Context) error {
				_, err := workloads.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				return err
			})
			d := apps.Deployment(createDeployment(ctx, f, "gang", 3, gangDeployment()))

			ginkgo.By(fmt.Sprintf("for %s no pod of the gang exists: without its Workload there is no PodGroup to put it in", outage))
			gomega.Consistently(ctx, func(ctx context.Context) (int, error) { return podCount(ctx, f, d) }).
				WithTimeout(outage).WithPolling(5 * time.Second).Should(gomega.BeZero())

			denial.Lift(ctx)
			// Retries with backoff may wait about as long again as they have
			// been failing (the D-P5 spec's allowance); a dropped key waits
			// for the informer's resync, hours.
			ginkgo.By(fmt.Sprintf("Workload creates admitted again: the gang is bound without anyone touching the Deployment (allowing the backoff, up to %s more)", (2 * outage).Round(time.Second)))
			afterBackoff := *f
			afterBackoff.Timeouts.PodsBound += 2 * outage
			apps.WaitForGang(ctx, &afterBackoff, d, 3, 3)
		})
	})
