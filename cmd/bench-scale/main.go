// Command bench-scale measures the implementation's controllers at scale on
// the harness's local cluster, against the same binary with the KEPs' gates
// off (`make bench-scale`; internal/benchscale does the work; it needs
// framework/, so it lives with its one user rather than in pkg/, below
// framework/):
//
//	bench-scale [--n '25 50 100 200'] [--quick] [--artifacts D] [--output-dir O]
//	            [--budget 25m] [--phase-timeout 5m] [--cpu-profile] [--scheduler-qps 500]
//
// It starts its own cluster (128 kwok nodes), stops it on exit and on
// Ctrl-C, and writes bench-scale.md and bench-scale.png into --artifacts.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/workload-aware/apps-harness/api/cluster"
	"github.com/workload-aware/apps-harness/cmd/bench-scale/internal/benchscale"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "bench-scale: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("bench-scale", flag.ContinueOnError)
	ns := fs.String("n", envOr("BENCH_N", "25 50 100 200"), "sizes N to measure, space- or comma-separated: N Deployments and N/2 StatefulSets each (env BENCH_N)")
	quick := fs.Bool("quick", false, "measure N=25 only (a first look in a few minutes)")
	replicas := fs.Int("replicas", 8, "replicas of each Deployment and StatefulSet")
	artifacts := fs.String("artifacts", envOr("ARTIFACTS", "_artifacts"), "directory for bench-scale.md, bench-scale.png and profiles")
	outputDir := fs.String("output-dir", envOr("OUTPUT_DIR", "_output"), "directory holding bin/ from hack/build-binaries.sh")
	workDir := fs.String("work-dir", "", "the cluster's work directory (default <output-dir>/bench-scale-cluster)")
	kubeVersion := fs.String("kube-version", envOr("KUBE_VERSION", cluster.KubeVersion), "Kubernetes version of the binaries")
	addon := fs.String("addon", "controllers/config/localcluster-addon.yaml", "descriptor of the implementation to measure")
	addonBinDir := fs.String("addon-bin-dir", "", "directory the add-on's binaries are resolved against (default <output-dir>/bin)")
	controller := fs.String("controller-component", "was-controller-manager", "the add-on component that runs the controllers")
	budget := fs.Duration("budget", 25*time.Minute, "bound on the whole run; what was measured by then is reported")
	phaseTimeout := fs.Duration("phase-timeout", 5*time.Minute, "bound on each phase's wait for bound pods, and on its cleanup")
	maxPods := fs.Int("max-pods-per-phase", 2400, "refuse an N whose phase creates more pods than this")
	schedulerQPS := fs.String("scheduler-qps", envOr("BENCH_SCHEDULER_QPS", "0"), "kube-scheduler's client QPS (burst twice that); 0 keeps its default of 50 (env BENCH_SCHEDULER_QPS)")
	controllerQPS := fs.String("controller-qps", envOr("BENCH_CONTROLLER_QPS", "0"), "the controller component's client QPS, each controller's (--kube-api-qps; burst twice that); 0 keeps its default (env BENCH_CONTROLLER_QPS)")
	cpuProfile := fs.Bool("cpu-profile", envOr("BENCH_PPROF", "") != "", "capture CPU profiles of the controller at the largest N into --artifacts (env BENCH_PPROF=1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sizes, err := parseSizes(*ns)
	if err != nil {
		return err
	}
	qps, err := strconv.Atoi(*schedulerQPS)
	if err != nil || qps < 0 {
		return fmt.Errorf("--scheduler-qps (env BENCH_SCHEDULER_QPS): %q is not a whole number of at least 0", *schedulerQPS)
	}
	cqps, err := strconv.Atoi(*controllerQPS)
	if err != nil || cqps < 0 {
		return fmt.Errorf("--controller-qps (env BENCH_CONTROLLER_QPS): %q is not a whole number of at least 0", *controllerQPS)
	}
	if *quick {
		sizes = []int{25}
	}
	art, err := filepath.Abs(*artifacts)
	if err != nil {
		return err
	}
	o := benchscale.Options{
		Ns: sizes, Replicas: *replicas, Artifacts: art, OutputDir: *outputDir, WorkDir: *workDir, KubeVersion: *kubeVersion,
		Addon: *addon, AddonBinDir: *addonBinDir, Controller: localcluster.Component(*controller),
		PhaseTimeout: *phaseTimeout, Budget: *budget, MaxPodsPerPhase: *maxPods, CPUProfile: *cpuProfile,
		SchedulerQPS: qps, ControllerQPS: cqps,
		Logf: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "%s [bench-scale] %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
		},
	}
	// Ctrl-C and SIGTERM cancel the run; Run stops the cluster either way.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	results, runErr := benchscale.Run(ctx, o)
	report := filepath.Join(art, benchscale.ReportFile)
	if len(results) > 0 {
		fmt.Printf("\n%s\n", strings.Join(benchscale.Goals(results), "\n"))
		fmt.Printf("\nreport: %s\nplot:   %s\n", report, filepath.Join(art, benchscale.PlotFile))
	}
	return runErr
}

// parseSizes reads "25 50,100" into [25 50 100].
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' }) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 2 {
			return nil, fmt.Errorf("--n: %q is not a size of at least 2", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--n: no size given")
	}
	return out, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
