package framework

import (
	"context"
	"fmt"
	"os"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// LocalCluster is the cluster the suite started, or nil when the suite runs
// against an existing cluster. Ginkgo process 1 started it; the others of a
// parallel run attach to it (ConnectSuite) to read its configuration and
// logs. Disruptive specs that restart components need it (RequireLocalCluster);
// they are Serial, so they run on process 1 after the others, or, with own
// clusters, on their process's own cluster, which this then names for the
// spec (owncluster.go).
var LocalCluster *localcluster.Cluster

// SetupCluster runs once per suite, on Ginkgo process 1: it starts a local
// cluster unless TestContext.Kubeconfig names one, registers its teardown
// (which also runs on interrupt), and returns the kubeconfig path for
// ConnectCluster on every process.
func SetupCluster(ctx context.Context) []byte {
	if err := TestContext.Resolve(); err != nil {
		ginkgo.Fail(fmt.Sprintf("resolving the suite configuration: %v", err))
	}
	if TestContext.Kubeconfig != "" {
		ginkgo.GinkgoWriter.Printf("Using the existing cluster of %s\n", TestContext.Kubeconfig)
		// Vendor mode: check the APIs, gates and implementation before any
		// spec, and stop at once, saying what is missing (prereq.go).
		cfg, err := clientcmd.BuildConfigFromFlags("", TestContext.Kubeconfig)
		if err != nil {
			ginkgo.Fail(fmt.Sprintf("loading kubeconfig %s: %v", TestContext.Kubeconfig, err))
		}
		if err := checkExistingCluster(ctx, cfg); err != nil {
			ginkgo.Fail(err.Error())
		}
		return []byte(TestContext.Kubeconfig)
	}
	cfg, err := localClusterConfig()
	if err != nil {
		ginkgo.Fail(fmt.Sprintf("configuring the local cluster: %v", err))
	}
	cfg.Logf = func(format string, args ...any) {
		// Progress goes to stderr at once, not into the spec's buffered output.
		fmt.Fprintf(os.Stderr, "[cluster] "+format+"\n", args...)
	}
	c, err := localcluster.New(cfg)
	if err != nil {
		ginkgo.Fail(fmt.Sprintf("configuring the local cluster: %v", err))
	}
	// Registered before Start so that an interrupted or failed start still
	// stops whatever came up.
	ginkgo.DeferCleanup(func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "[cluster] stopping: %v\n", err)
		}
		fmt.Fprintf(os.Stderr, "[cluster] stopped; component logs kept in %s\n", c.LogDir())
	})
	if err := c.Start(ctx); err != nil {
		ginkgo.Fail(fmt.Sprintf("starting the local cluster: %v", err))
	}
	LocalCluster = c
	recordLocalEnvironment(ctx, c) // $ARTIFACTS/environment.json for the report
	return []byte(c.KubeconfigPath())
}

var (
	restConfig *rest.Config
	clientSet  kubernetes.Interface
)

// ConnectCluster runs on every Ginkgo process with SetupCluster's result.
func ConnectCluster(kubeconfig []byte) {
	if err := TestContext.Resolve(); err != nil {
		ginkgo.Fail(err.Error())
	}
	conn, err := connect(string(kubeconfig), LocalCluster)
	if err != nil {
		ginkgo.Fail(err.Error())
	}
	conn.use()
	seam := conn.intent
	ginkgo.GinkgoWriter.Printf("Scheduling intent is written as: %s (Deployments), %s (StatefulSets)\n", seam.Mode, seam.StatefulSetMode)
}

// RESTConfig and ClientSet give access to the cluster under test.
func RESTConfig() *rest.Config        { return rest.CopyConfig(restConfig) }
func ClientSet() kubernetes.Interface { return clientSet }

// RequireLocalCluster skips the spec, saying why, when the suite does not own
// the cluster (the spec restarts or reconfigures components).
func RequireLocalCluster() *localcluster.Cluster {
	if LocalCluster == nil {
		ginkgo.Skip("needs the harness's local cluster (it restarts control-plane components); the suite runs against an existing cluster")
	}
	return LocalCluster
}
