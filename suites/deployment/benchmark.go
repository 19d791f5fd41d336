package deployment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
)

// Writes are attributed from the apiserver's audit log (framework.AuditLogPath:
// the local cluster's, or --audit-log's, which make e2e-kind gives); on an
// existing cluster without one the write-count spec skips (it cannot see who
// wrote).

// Benchmark specs measure; they assert only what is deterministic (write
// counts), and record timings in $ARTIFACTS/bench_deployment.md without
// judging them: these machines are shared and noisy.
var benchmark = ginkgo.Label("Benchmark")

var _ = ginkgo.Describe("Deployment scheduling cost", framework.KEP(6276), benchmark, framework.Serial,
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment), func() {
		f := framework.New("deploy-bench")

		ginkgo.It("writes exactly the Workload and PodGroup API calls the KEP's Scalability section lists over a lifecycle", func(ctx context.Context) {
			report := &benchReport{}
			ginkgo.DeferCleanup(report.write)
			audit := framework.NewAuditedWrites(f.Namespace)
			// settled waits until the audit log stops growing, then returns the
			// writes since the phase began.
			settled := func() framework.WriteCounts {
				gomega.Consistently(ctx, func() string { return audit.Since().String() }).
					WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(gomega.Equal(audit.Since().String()))
				return audit.Since()
			}
			phase := func(name, want string, step func()) {
				audit.Reset()
				step()
				all := settled()
				ours := all.Only("deployment-controller:", "replicaset-controller:")
				report.rows = append(report.rows, fmt.Sprintf("| %s | %s | %s | %s |", name, ours, want, all.Without("deployment-controller:", "replicaset-controller:")))
				gomega.Expect(ours.String()).To(gomega.Equal(want), "Workload and PodGroup writes of the controllers during %q (all writes: %s)", name, all)
			}

			var d *appsv1.Deployment
			phase("create (3 replicas)", "deployment-controller: create workloads=1, replicaset-controller: create podgroups=1", func() {
				d = create(ctx, recreate(f, "bench", 3, "100m").Obj(), gang(nil))
				framework.WaitForPodsRunning(ctx, podsOf(f, d), 3)
			})
			// "Nothing happens" lasts the suite's one window (at least the
			// longest retry interval it permits): a controller that rewrites
			// on a 30 s resync would pass 5 s.
			phase("steady state (the nothing-happens window, nothing changes)", "none", func() {
				gomega.Consistently(ctx, func() (int, error) {
					s, err := framework.BindingState(ctx, podsOf(f, d))
					return s.Running, err
				}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal(3))
			})
			phase("scale up 3 -> 5", "deployment-controller: update workloads=1, replicaset-controller: update podgroups=1", func() {
				gomega.Expect(scale(ctx, f, d, 5)).To(gomega.Succeed())
				framework.WaitForPodsRunning(ctx, podsOf(f, d), 5)
				waitForGangState(ctx, f, d, 5, true)
			})
			phase("scale down 5 -> 2", "deployment-controller: update workloads=1, replicaset-controller: update podgroups=1", func() {
				gomega.Expect(scale(ctx, f, d, 2)).To(gomega.Succeed())
				framework.WaitForPodsRunning(ctx, podsOf(f, d), 2)
				waitForGangState(ctx, f, d, 2, true)
			})
			phase("scale to zero", "deployment-controller: update workloads=1, replicaset-controller: delete podgroups=1", func() {
				gomega.Expect(scale(ctx, f, d, 0)).To(gomega.Succeed())
				framework.WaitForPodsRunning(ctx, podsOf(f, d), 0)
				waitForGangState(ctx, f, d, 1, false)
			})
			phase("scale back 0 -> 3", "deployment-controller: update workloads=1, replicaset-controller: create podgroups=1", func() {
				gomega.Expect(scale(ctx, f, d, 3)).To(gomega.Succeed())
				framework.WaitForPodsRunning(ctx, podsOf(f, d), 3)
				waitForGangState(ctx, f, d, 3, true)
			})
			// The deletes are the garbage collector's, not the controllers'.
			phase("delete the Deployment (background)", "none", func() {
				gomega.Expect(f.ClientSet.AppsV1().Deployments(f.Namespace).Delete(ctx, d.Name, metav1.DeleteOptions{
					PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})).To(gomega.Succeed())
				gomega.Eventually(ctx, func(ctx context.Context) string {
					return fmt.Sprintf("workloads=%d podgroups=%d", len(workloadsOf(ctx, f, d)), len(podGroups(ctx, f)))
				}).WithTimeout(f.Timeouts.Cleanup).Should(gomega.Equal("workloads=0 podgroups=0"))
				framework.WaitForPodsRunning(ctx, podsOf(f, d), 0)
			})
		})

		ginkgo.It("measures the time from create to all pods bound, gang versus plain", func(ctx context.Context) {
			report := &benchReport{}
			ginkgo.DeferCleanup(report.write)
			const replicas, rounds = 16, 5
			timeToBound := func(name string, cfg *framework.DeploymentScheduling) time.Duration {
				start := time.Now()
				d := create(ctx, recreate(f, name, replicas, "200m").Obj(), cfg)
				gomega.Eventually(ctx, func(ctx context.Context) (int, error) {
					s, err := framework.BindingState(ctx, podsOf(f, d))
					return s.Bound, err
				}).WithTimeout(f.Timeouts.PodsBound).WithPolling(20 * time.Millisecond).Should(gomega.Equal(replicas))
				took := time.Since(start)
				gomega.Expect(f.ClientSet.AppsV1().Deployments(f.Namespace).Delete(ctx, d.Name, metav1.DeleteOptions{})).To(gomega.Succeed())
				framework.WaitForPodsRunning(ctx, podsOf(f, d), 0)
				return took
			}
			var gangTimes, plainTimes []time.Duration
			for i := range rounds {
				plainTimes = append(plainTimes, timeToBound(fmt.Sprintf("plain-%d", i), nil))
				gangTimes = append(gangTimes, timeToBound(fmt.Sprintf("gang-%d", i), gang(nil)))
			}
			g, p := median(gangTimes), median(plainTimes)
			report.rows = append(report.rows,
				fmt.Sprintf("| create to %d pods bound, plain (median of %d) | %s | | %v |", replicas, rounds, p.Round(time.Millisecond), plainTimes),
				fmt.Sprintf("| create to %d pods bound, gang (median of %d) | %s | | %v |", replicas, rounds, g.Round(time.Millisecond), gangTimes),
				fmt.Sprintf("| gang / plain | %.2f | at most 1.2 | |", float64(g)/float64(p)),
			)
			ginkgo.AddReportEntry("gang/plain time-to-bound ratio", fmt.Sprintf("%.2f (gang %s, plain %s)", float64(g)/float64(p), g, p))
		})
	})

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchReport appends a spec's figures to $ARTIFACTS/bench_deployment.md.
type benchReport struct{ rows []string }

func (b *benchReport) write() {
	if len(b.rows) == 0 {
		return
	}
	path := filepath.Join(framework.TestContext.Artifacts, "bench_deployment.md")
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		ginkgo.GinkgoWriter.Printf("writing %s: %v\n", path, err)
		return
	}
	defer fh.Close()
	fmt.Fprintf(fh, "\n## %s\n\n| step | measured | expected | other writers |\n|---|---|---|---|\n%s\n", ginkgo.CurrentSpecReport().LeafNodeText, strings.Join(b.rows, "\n"))
	ginkgo.GinkgoWriter.Printf("figures appended to %s\n", path)
}
