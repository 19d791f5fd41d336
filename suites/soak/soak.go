// Package soak churns the implementation under test: gang Deployments and
// StatefulSets created, scaled and deleted in a loop, bounded in count and
// time (`make soak DURATION=10m`). It skips unless a duration is given.
//
// What it proves, over the whole run rather than once:
//   - no duplicate Workload or PodGroup ever exists, even for an instant
//     (framework.WatchForDuplicates);
//   - the controllers' Workload and PodGroup writes per operation stay the
//     KEPs' list (from the apiserver's audit log);
//   - the controller process neither leaks memory (RSS after warm-up grows by
//     at most 20%) nor goroutines (no steady climb), sampled from its /metrics.
package soak

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

var (
	duration   = flag.Duration("soak-duration", envDuration("SOAK_DURATION"), "how long the churn soak runs (env SOAK_DURATION); 0 skips it")
	controller = flag.String("soak-controller-component", "was-controller-manager", "the local cluster's add-on component that runs the implementation's controllers, whose /metrics the soak samples")
)

func envDuration(name string) time.Duration {
	d, _ := time.ParseDuration(os.Getenv(name))
	return d
}

const (
	// warmUpShare of the run is not judged for memory: caches fill first.
	warmUpShare = 0.25
	// rssGrowthLimit is the largest allowed growth of RSS after warm-up.
	rssGrowthLimit = 0.20
	// goroutineSlack absorbs the ordinary coming and going of goroutines
	// (watches reconnecting, work queues' workers); a leak grows without bound.
	goroutineSlack = 10
	// maxCycles bounds the run whatever the duration.
	maxCycles = 500
)

// Per cycle, the writes KEP-6276 and KEP-6277 list for the operations the
// cycle performs (create, scale up, scale to zero or down, delete; deletes of
// dependents are the garbage collector's, not the controllers').
var (
	deploymentCycleWrites = "deployment-controller: create workloads=1, deployment-controller: update workloads=2, " +
		"replicaset-controller: create podgroups=1, replicaset-controller: delete podgroups=1, replicaset-controller: update podgroups=1"
	statefulSetCycleWrites = "statefulset-controller: create podgroups=1, statefulset-controller: create workloads=1, " +
		"statefulset-controller: update podgroups=2, statefulset-controller: update workloads=2"
)

var _ = ginkgo.Describe("Churn soak of the implementation", ginkgo.Label("Soak"), framework.Serial,
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("soak")

		ginkgo.It("creates, scales and deletes gang Deployments and StatefulSets with no duplicate, the KEPs' writes per operation, and flat memory and goroutines", func(ctx context.Context) {
			if *duration <= 0 {
				ginkgo.Skip("the soak runs only when asked: make soak DURATION=10m (or --soak-duration / SOAK_DURATION)")
			}
			lc := framework.RequireLocalCluster()
			metricsURL, err := lc.MetricsURL(localcluster.Component(*controller))
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			framework.WatchForDuplicates(ctx, f.ClientSet, f.Namespace) // fails the spec at the first duplicate
			audit := framework.NewAuditedWrites(f.Namespace)
			rep := &report{started: time.Now()}
			ginkgo.DeferCleanup(rep.write)

			deadline := time.Now().Add(*duration)
			for cycle := 0; cycle < maxCycles && time.Now().Before(deadline); cycle++ {
				audit.Reset()
				deploymentCycle(ctx, f, fmt.Sprintf("d%d", cycle))
				statefulSetCycle(ctx, f, fmt.Sprintf("s%d", cycle))
				writes := settledWrites(ctx, audit)
				got := writes.Only("deployment-controller:", "replicaset-controller:", "statefulset-controller:").String()
				rep.sample(ctx, metricsURL, cycle, got)
				gomega.Expect(got).To(gomega.Equal(deploymentCycleWrites+", "+statefulSetCycleWrites),
					"cycle %d: the controllers' Workload and PodGroup writes differ from the KEPs' list (all writes: %s)", cycle, writes)
			}
			gomega.Expect(rep.samples).NotTo(gomega.BeEmpty(), "no cycle completed within %s", *duration)
			rep.judge()
		})
	})

func gangIntent() *schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy {
	return &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{}}
}

// deploymentCycle: create 3 -> scale 5 -> scale 0 -> delete.
func deploymentCycle(ctx context.Context, f *framework.Framework, name string) {
	ginkgo.GinkgoHelper()
	d := builder.Deployment(name, f.Namespace).Replicas(3).Recreate().Request(corev1.ResourceCPU, "10m").Obj()
	d, err := framework.Intent.CreateDeployment(ctx, d, &framework.DeploymentScheduling{SchedulingPolicy: gangIntent()})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	a := apps.Deployment(d)
	apps.WaitForGang(ctx, f, a, 3, 3)
	apps.Scale(ctx, f, a, 5)
	apps.WaitForGang(ctx, f, a, 5, 5)
	apps.Scale(ctx, f, a, 0)
	apps.WaitForWorkloadOnly(ctx, f, a, 1)
	deleteAndWait(ctx, f, a, func(ctx context.Context) error {
		return f.ClientSet.AppsV1().Deployments(f.Namespace).Delete(ctx, d.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	})
}

// statefulSetCycle: create 3 -> scale 5 -> scale 2 -> delete.
func statefulSetCycle(ctx context.Context, f *framework.Framework, name string) {
	ginkgo.GinkgoHelper()
	set := builder.StatefulSet(name, f.Namespace).Replicas(3).Parallel().Request(corev1.ResourceCPU, "10m").Obj()
	set, err := framework.Intent.CreateStatefulSet(ctx, set, &framework.StatefulSetScheduling{SchedulingPolicy: gangIntent()})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	a := apps.StatefulSet(set)
	apps.WaitForGang(ctx, f, a, 3, 3)
	apps.Scale(ctx, f, a, 5)
	apps.WaitForGang(ctx, f, a, 5, 5)
	apps.Scale(ctx, f, a, 2)
	apps.WaitForGang(ctx, f, a, 2, 2)
	deleteAndWait(ctx, f, a, func(ctx context.Context) error {
		return f.ClientSet.AppsV1().StatefulSets(f.Namespace).Delete(ctx, set.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	})
}

// deleteAndWait deletes the app and waits until its pods, Workloads and
// PodGroups are gone, so cycles never overlap and stay bounded in count.
func deleteAndWait(ctx context.Context, f *framework.Framework, a apps.App, del func(context.Context) error) {
	ginkgo.GinkgoHelper()
	gomega.Expect(del(ctx)).To(gomega.Succeed())
	gomega.Eventually(ctx, func(ctx context.Context) string {
		s := apps.Read(ctx, f, a)
		return fmt.Sprintf("workloads=%d podgroups=%d pods=%d", len(s.Workloads), len(s.PodGroups), len(s.Pods))
	}).WithTimeout(f.Timeouts.Cleanup).WithPolling(f.Timeouts.Poll).Should(gomega.Equal("workloads=0 podgroups=0 pods=0"), "%s not gone", a)
}

// settledWrites waits until the audit log stops growing, then returns the
// writes since the last reset.
func settledWrites(ctx context.Context, audit *framework.AuditedWrites) framework.WriteCounts {
	var last string
	gomega.Eventually(ctx, func() bool {
		now := audit.Since().String()
		same := now == last
		last = now
		return same
	}).WithTimeout(framework.TestContext.Timeouts.PodsBound).WithPolling(framework.TestContext.Timeouts.StaysUnbound / 2).Should(gomega.BeTrue())
	return audit.Since()
}

type sample struct {
	cycle      int
	at         time.Duration
	rss        float64
	goroutines float64
	writes     string
}

type report struct {
	started time.Time
	samples []sample
	verdict []string
}

func (r *report) sample(ctx context.Context, url string, cycle int, writes string) {
	ginkgo.GinkgoHelper()
	rss, err := framework.ReadGauge(ctx, url, "process_resident_memory_bytes")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	g, err := framework.ReadGauge(ctx, url, "go_goroutines")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	r.samples = append(r.samples, sample{cycle: cycle, at: time.Since(r.started), rss: rss, goroutines: g, writes: writes})
}

// judge fails the spec if RSS grew by more than rssGrowthLimit after warm-up,
// or the goroutine count kept climbing (the last third's lowest value is
// above the first third's highest by more than goroutineSlack).
func (r *report) judge() {
	ginkgo.GinkgoHelper()
	judged := r.samples[int(float64(len(r.samples))*warmUpShare):]
	if len(judged) < 3 {
		r.verdict = append(r.verdict, fmt.Sprintf("only %d samples after warm-up: too short to judge memory (run longer)", len(judged)))
		return
	}
	first, last := judged[0], judged[len(judged)-1]
	growth := last.rss/first.rss - 1
	r.verdict = append(r.verdict, fmt.Sprintf("RSS after warm-up: %.1f MiB -> %.1f MiB (%+.1f%%, limit +%.0f%%)", first.rss/(1<<20), last.rss/(1<<20), 100*growth, 100*rssGrowthLimit))
	third := max(1, len(judged)/3)
	early, late := judged[:third], judged[len(judged)-third:]
	earlyMax := slices.MaxFunc(early, func(a, b sample) int { return int(a.goroutines - b.goroutines) }).goroutines
	lateMin := slices.MinFunc(late, func(a, b sample) int { return int(a.goroutines - b.goroutines) }).goroutines
	r.verdict = append(r.verdict, fmt.Sprintf("goroutines: first third at most %.0f, last third at least %.0f (slack %d)", earlyMax, lateMin, goroutineSlack))
	gomega.Expect(growth).To(gomega.BeNumerically("<=", rssGrowthLimit), "the controller's RSS grew by %.1f%% after warm-up", 100*growth)
	gomega.Expect(lateMin).To(gomega.BeNumerically("<=", earlyMax+goroutineSlack), "the controller's goroutines keep growing")
}

// write puts the figures in $ARTIFACTS/soak.md, also when the spec failed.
func (r *report) write() {
	if len(r.samples) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Churn soak\n\n%d cycles (one gang Deployment and one gang StatefulSet each) in %s; duplicates: 0 (the watcher fails the spec at the first).\n\n",
		len(r.samples), time.Since(r.started).Round(time.Second))
	for _, v := range r.verdict {
		fmt.Fprintf(&b, "* %s\n", v)
	}
	b.WriteString("\n| cycle | at | RSS MiB | goroutines | controller writes in the cycle |\n|---:|---:|---:|---:|---|\n")
	for _, s := range r.samples {
		fmt.Fprintf(&b, "| %d | %s | %.1f | %.0f | %s |\n", s.cycle, s.at.Round(time.Second), s.rss/(1<<20), s.goroutines, s.writes)
	}
	path := filepath.Join(framework.TestContext.Artifacts, "soak.md")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		ginkgo.GinkgoWriter.Printf("writing %s: %v\n", path, err)
	}
	ginkgo.GinkgoWriter.Printf("soak figures in %s\n", path)
}
