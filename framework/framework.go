package framework

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// NamespaceLabel marks namespaces the harness created, so leftovers of an
// interrupted run against an existing cluster can be found and removed.
const NamespaceLabel = "was-harness.io/e2e"

// Framework gives a spec its own namespace and cleans it up afterwards.
// Create one per Describe with New; its fields are valid inside specs.
type Framework struct {
	BaseName  string
	ClientSet kubernetes.Interface
	Namespace string
	Timeouts  Timeouts
}

// New registers a BeforeEach that creates a fresh namespace named after
// baseName, and cleanup that dumps the namespace's objects when the spec
// failed and then deletes it, waiting until its pods are gone so that the
// next spec has the cluster's full capacity.
func New(baseName string) *Framework {
	f := &Framework{BaseName: baseName}
	ginkgo.BeforeEach(func(ctx context.Context) {
		f.ClientSet = ClientSet()
		f.Timeouts = TestContext.Timeouts
		gomega.Expect(f.ClientSet).NotTo(gomega.BeNil(), "the suite is not connected to a cluster (SynchronizedBeforeSuite did not run)")
		if slices.Contains(ginkgo.CurrentSpecReport().Labels(), Disruptive[0]) {
			// Registered first, so it runs last: after the namespace is gone.
			ginkgo.DeferCleanup(f.settleAfterDisruption)
		}
		f.Namespace = f.createNamespace(ctx)
		ginkgo.DeferCleanup(f.cleanup)
	})
	return f
}

// settleAfterDisruption waits, after a Disruptive spec, until the cluster's
// controllers serve a new namespace again: its "default" ServiceAccount
// appears. A component restart does not end when the process is ready. Every
// client-go reflector that saw the apiserver refuse connections backs off
// exponentially (0.8 s doubling to 30 s, reset only after 2 quiet minutes), so
// after a few apiserver restarts in a row kube-controller-manager's informers
// can lag by half a minute. Measured in CI: the next spec's namespace then
// waited 30 s for its ServiceAccount and failed in BeforeEach. The wait
// belongs to the spec that disrupted, with a bound that covers the backoff.
func (f *Framework) settleAfterDisruption(ctx context.Context) {
	t0 := time.Now()
	ns := f.newServedNamespace(ctx, "settle", settleTimeout(f.Timeouts))
	if err := f.ClientSet.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		ginkgo.GinkgoWriter.Printf("deleting probe namespace %s: %v\n", ns, err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		ginkgo.GinkgoWriter.Printf("the cluster's controllers served a new namespace %.1fs after this Disruptive spec\n", d.Seconds())
	}
}

// settleTimeout covers the reflectors' longest backoff (30 s) twice over, and
// more on a machine the calibration found slow.
func settleTimeout(t Timeouts) time.Duration {
	return max(2*time.Minute, 4*t.Namespace)
}

func (f *Framework) createNamespace(ctx context.Context) string {
	name := f.newServedNamespace(ctx, f.BaseName, f.Timeouts.Namespace)
	ginkgo.By("using namespace " + name)
	return name
}

// newServedNamespace creates a harness namespace named after base and waits
// until kube-controller-manager's serviceaccount controller has made its
// "default" ServiceAccount: pods are rejected before that.
func (f *Framework) newServedNamespace(ctx context.Context, base string, timeout time.Duration) string {
	ginkgo.GinkgoHelper()
	created, err := f.ClientSet.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: base + "-",
		Labels:       map[string]string{NamespaceLabel: "true"},
	}}, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating a namespace (is kube-apiserver serving?)")
	name := created.Name
	gomega.Eventually(ctx, func(ctx context.Context) error {
		_, err := f.ClientSet.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err
	}).WithTimeout(timeout).WithPolling(f.Timeouts.Poll).Should(gomega.Succeed(),
		"waiting for the default ServiceAccount of namespace %s (kube-controller-manager's serviceaccount controller makes it; is it running and connected?)", name)
	return name
}

func (f *Framework) cleanup(ctx context.Context) {
	if ginkgo.CurrentSpecReport().Failed() {
		dir := DumpNamespace(ctx, f.ClientSet, f.Namespace, specArtifactDir())
		ginkgo.GinkgoWriter.Printf("Dumped namespace %s to %s\n", f.Namespace, dir)
	}
	err := f.ClientSet.CoreV1().Namespaces().Delete(ctx, f.Namespace, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		ginkgo.Fail(fmt.Sprintf("deleting namespace %s: %v", f.Namespace, err))
	}
	// The namespace controller reaches the pods only after listing and
	// deleting every other namespaced resource at kube-controller-manager's
	// client rate, which takes seconds, more when parallel specs clean up at
	// once. The namespace is terminating now, so no controller can create
	// pods in it: start their (graceful) deletion at once.
	if err := f.ClientSet.CoreV1().Pods(f.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		ginkgo.GinkgoWriter.Printf("deleting the pods of namespace %s (the namespace controller will): %v\n", f.Namespace, err)
	}
	gomega.Eventually(ctx, func(ctx context.Context) ([]string, error) {
		pods, err := f.ClientSet.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(pods.Items))
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		return names, nil
	}).WithTimeout(f.Timeouts.Cleanup).WithPolling(f.Timeouts.Poll).Should(gomega.BeEmpty(),
		"waiting for the pods of deleted namespace %s to go", f.Namespace)
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// specArtifactDir is a directory name for the current spec's artifacts.
func specArtifactDir() string {
	name := unsafeChars.ReplaceAllString(ginkgo.CurrentSpecReport().FullText(), "_")
	if len(name) > 120 {
		name = name[:120]
	}
	return strings.Trim(name, "_")
}
