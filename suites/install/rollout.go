package install

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workload-aware/apps-harness/framework"
)

// rolloutAnnotation is what `kubectl rollout restart` sets.
const rolloutAnnotation = "kubectl.kubernetes.io/restartedAt"

var _ = ginkgo.Describe("Install of the reference implementation: a webhook rollout", framework.Harness, framework.Serial, framework.Disruptive, func() {
	f := framework.New("install-rollout")

	// The webhook fails closed, and a one-control-plane cluster runs one
	// webhook pod: a rollout that stops it before its successor is ready, or
	// drops the API server's connections, rejects every scale meanwhile.
	// deploy/ rolls with maxSurge 1 and maxUnavailable 0, and a pod being
	// replaced serves on for --shutdown-delay.
	ginkgo.It("rolls the webhook's DaemonSet, and back, while Deployments are scaled through it, rejecting none", func(ctx context.Context) {
		in := requireInstalled(ctx, f, framework.ReferenceWebhook)
		if in.local != nil {
			ginkgo.Skip("the rollout is deploy/'s DaemonSet's, which the harness's local cluster does not run (its webhook is a process)")
		}
		if framework.Intent.Mode != framework.IntentAnnotation {
			ginkgo.Skip("the reference webhook sees only intent written as its annotation; the server serves spec.scheduling natively")
		}
		ds := in.daemonSet
		previous, had := ds.Spec.Template.Annotations[rolloutAnnotation]

		real := startScaler(ctx, f, 500*time.Millisecond)
		time.Sleep(5 * time.Second) // scales before the rollout too

		ginkgo.By("rolling the webhook (kubectl rollout restart)")
		restartedAt := time.Now().Format(time.RFC3339)
		rollWebhook(ctx, f, ds, fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, rolloutAnnotation, restartedAt))

		ginkgo.By("rolling it back to the DaemonSet's template as the spec found it")
		back := `{"spec":{"template":{"metadata":{"annotations":{%q:null}}}}}`
		if had {
			back = fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{%q:%q}}}}}`, rolloutAnnotation, previous)
		} else {
			back = fmt.Sprintf(back, rolloutAnnotation)
		}
		rollWebhook(ctx, f, ds, back)
		time.Sleep(5 * time.Second)
		real.expectEveryScaleReviewed(20, "during two rollouts of the webhook")
	})
})

// rollWebhook patches the DaemonSet's template and waits until every pod
// runs the new template and is ready, with no old pod left.
func rollWebhook(ctx context.Context, f *framework.Framework, ds *appsv1.DaemonSet, patch string) {
	ginkgo.GinkgoHelper()
	dsClient := f.ClientSet.AppsV1().DaemonSets(ds.Namespace)
	patched, err := dsClient.Patch(ctx, ds.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "patching DaemonSet %s/%s", ds.Namespace, ds.Name)
	start := time.Now()
	gomega.Eventually(ctx, func() error {
		cur, err := dsClient.Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		st := cur.Status
		if st.ObservedGeneration < patched.Generation || st.UpdatedNumberScheduled != st.DesiredNumberScheduled ||
			st.NumberAvailable != st.DesiredNumberScheduled || st.NumberUnavailable != 0 {
			return fmt.Errorf("rolling: %+v", st)
		}
		pods, err := f.ClientSet.CoreV1().Pods(ds.Namespace).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(ds.Spec.Selector.MatchLabels).String()})
		if err != nil {
			return err
		}
		if int32(len(pods.Items)) != st.DesiredNumberScheduled {
			return fmt.Errorf("%d pods for %d nodes: an old pod is still terminating", len(pods.Items), st.DesiredNumberScheduled)
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || !podReady(&p) {
				return fmt.Errorf("pod %s not ready or terminating", p.Name)
			}
		}
		return nil
	}).WithTimeout(5*time.Minute).WithPolling(time.Second).Should(gomega.Succeed(), "the webhook's rollout did not finish")
	ginkgo.AddReportEntry("webhook rollout", fmt.Sprintf("%s in %s", patch, time.Since(start).Round(time.Second)))
}
