//go:build parity

// Package parity is the test binary of `make parity`: Kubernetes' own
// [sig-apps] e2e specs of the pinned version (k8s.io/kubernetes/test/e2e/apps,
// built from the module), run unchanged against the cluster under test. The
// harness's suites are not linked: this binary judges the implementation by
// upstream's yardstick alone, and hack/parity.sh compares its report with
// stock kube-controller-manager's (cmd/was-harness parity-report).
package parity

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	types2 "github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"
	"github.com/workload-aware/apps-harness/pkg/parity"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/logs"
	"k8s.io/klog/v2"

	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"
	e2enode "k8s.io/kubernetes/test/e2e/framework/node"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"
	testfixtures "k8s.io/kubernetes/test/fixtures"

	// The specs: Deployment, ReplicaSet, StatefulSet (and the rest of apps,
	// which the focus of hack/parity.sh leaves out).
	_ "k8s.io/kubernetes/test/e2e/apps"

	// As upstream's e2e_test.go: constants frozen, framework reconfigured.
	_ "k8s.io/kubernetes/test/e2e/feature"
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
)

// The parity flags: which mode this run is (for the record) and where the
// Observer's record goes (empty: no Observer).
var (
	mode             = flag.String("parity-mode", "", "the run's mode (baseline, plain, basic, gang), written into the observations")
	observationsFile = flag.String("parity-observations", "", "write what the Observer saw (Workloads, PodGroups, pods in groups) to this JSON file")
	progressFile     = flag.String("parity-progress", "", "append one line per finished spec to this file (hack/parity.sh follows it)")
	strategyFile     = flag.String("parity-strategy-dependent", "", "gang mode: the specs whose strategy the intent policy must leave as written (hack/parity/strategy-dependent.txt)")
)

// strategyRules are the specs that keep their strategy in gang mode.
var strategyRules []parity.StrategyRule

func TestMain(m *testing.M) {
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unknown arguments: %v\n", flag.Args())
		os.Exit(2)
	}
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())
	testfiles.AddFileSource(testfixtures.GetTestFixturesFS())
	framework.AfterReadingAllFlags(&framework.TestContext)
	if *strategyFile != "" {
		rules, err := parity.LoadStrategyRules(*strategyFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		strategyRules = rules
	}
	// Runs right after every framework's BeforeEach, which made the
	// spec's namespace, and before anything the spec creates in it.
	framework.NewFrameworkExtensions = append(framework.NewFrameworkExtensions, func(f *framework.Framework) {
		ginkgo.BeforeEach(func(ctx context.Context) {
			ginkgo.DeferCleanup(writeProgress)
			markNamespace(ctx, f)
		})
	})
	os.Exit(m.Run())
}

func TestParity(t *testing.T) {
	logs.InitLogs()
	defer logs.FlushLogs()
	klog.EnableContextualLogging(true)
	gomega.RegisterFailHandler(framework.Fail)
	suiteConfig, reporterConfig := framework.CreateGinkgoConfig()
	ginkgo.RunSpecs(t, "Kubernetes sig-apps e2e (parity)", suiteConfig, reporterConfig)
}

// The Observer runs on process 1 from before the first spec until every
// process has finished.
var (
	observer     *parity.Observer
	stopObserver context.CancelFunc
)

// Upstream's suite set-up, the part these specs need: every node
// schedulable before the first spec (upstream e2e.go's setupSuite). Then
// the Observer starts.
var _ = ginkgo.SynchronizedBeforeSuite(func(ctx context.Context) []byte {
	c, err := framework.LoadClientset()
	framework.ExpectNoError(err, "connecting to the cluster")
	framework.ExpectNoError(e2enode.WaitForAllNodesSchedulable(ctx, c, 5*time.Minute), "waiting for the nodes")
	if *observationsFile != "" {
		var obsCtx context.Context
		obsCtx, stopObserver = context.WithCancel(context.Background())
		observer = parity.NewObserver(c, *mode)
		framework.ExpectNoError(observer.Start(obsCtx), "starting the parity observer")
	}
	return nil
}, func(context.Context, []byte) {})

var _ = ginkgo.SynchronizedAfterSuite(func() {}, func() {
	if observer == nil {
		return
	}
	defer stopObserver()
	framework.ExpectNoError(observer.Observations().WriteFile(*observationsFile), "writing the parity observations")
})

// markNamespace writes the spec's name on its namespace (the Observer
// reads it, so parity.md can say which spec created what) and, in gang
// mode, whether the intent policy may rewrite the strategy there; then it
// waits until the policy sees that, with a server-side dry run.
func markNamespace(ctx context.Context, f *framework.Framework) {
	if f.Namespace == nil || f.ClientSet == nil {
		return
	}
	spec := ginkgo.CurrentSpecReport().FullText()
	strategy := ""
	if *mode == "gang" {
		strategy = parity.StrategyRewrite
		if reason, ok := parity.DependsOnStrategy(strategyRules, spec); ok {
			strategy = parity.StrategyAsWritten
			framework.Logf("parity: this spec keeps the strategies it writes (%s): gang intent only where they allow it", reason)
		}
	}
	patch := map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{parity.SpecAnnotation: spec},
	}}
	if strategy != "" {
		patch["metadata"].(map[string]any)["labels"] = map[string]string{parity.StrategyLabel: strategy}
	}
	data, err := json.Marshal(patch)
	framework.ExpectNoError(err)
	_, err = f.ClientSet.CoreV1().Namespaces().Patch(ctx, f.Namespace.Name, types.MergePatchType, data, metav1.PatchOptions{})
	framework.ExpectNoError(err, "parity: marking the spec's namespace")
	if strategy != parity.StrategyRewrite {
		return
	}
	// The policy reads the label from its namespace cache: wait until a
	// dry-run RollingUpdate Deployment comes back rewritten.
	probe := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "parity-probe-"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"parity-probe": "true"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"parity-probe": "true"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10.2"}}},
			},
		},
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := f.ClientSet.AppsV1().Deployments(f.Namespace.Name).Create(ctx, probe.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			framework.Logf("parity: dry-run probe: %v", err)
			return false, nil
		}
		return got.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType, nil
	})
	framework.ExpectNoError(err, "parity: the gang intent policy did not rewrite a dry-run Deployment in a namespace labelled %s=%s; is fixtures/parity/gang.yaml installed?", parity.StrategyLabel, parity.StrategyRewrite)
}

// writeProgress appends one line per spec as it ends, from every process,
// to one file: the progress hack/parity.sh shows (parallel processes' own
// output reaches the ginkgo CLI only with each spec's whole report). It is
// a DeferCleanup of the framework extension's BeforeEach, so it runs for
// exactly the specs that ran, before the framework tears the namespace
// down. (Neither a top-level AfterEach nor a ReportAfterEach served: next
// to upstream's suite the first never ran, and the second reported all 758
// specs in every process as the run started.)
func writeProgress() {
	if *progressFile == "" {
		return
	}
	r := ginkgo.CurrentSpecReport()
	state := "passed"
	switch {
	case r.Failed():
		state = "FAILED"
	case r.State == types2.SpecStateSkipped:
		state = "skipped"
	}
	line := fmt.Sprintf("%-8s %5.0fs  %s\n", state, time.Since(r.StartTime).Seconds(), parity.SpecName(r.FullText()))
	if r.Failed() {
		line += "         " + strings.SplitN(strings.TrimSpace(r.FailureMessage()), "\n", 2)[0] + "\n"
	}
	f, err := os.OpenFile(*progressFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(line)
}
