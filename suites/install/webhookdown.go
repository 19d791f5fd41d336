package install

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/builder"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

var _ = ginkgo.Describe("Install of the reference implementation: a stopped webhook", framework.Harness, framework.Serial, framework.Disruptive, func() {
	f := framework.New("install-webhook-down")

	// failurePolicy Fail protects minCount, so a stopped webhook must block
	// only what may carry intent, and never the control plane: the
	// namespaceSelector keeps kube-system (and the install's namespace) out.
	ginkgo.It("lets plain Deployments and kube-system scale requests through, and rejects intent naming the webhook", func(ctx context.Context) {
		webhook := requireInstalled(ctx, f, framework.ReferenceWebhook)
		webhookName := rendered().webhookConfiguration().Webhooks[0].Name
		cs := f.ClientSet

		system := createPlainDeployment(ctx, cs, "kube-system", "was-harness-webhook-down-"+utilrand.String(5), 0)
		ginkgo.DeferCleanup(func(ctx context.Context) {
			err := cs.AppsV1().Deployments("kube-system").Delete(ctx, system.Name, metav1.DeleteOptions{})
			if !apierrors.IsNotFound(err) {
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "deleting kube-system/%s", system.Name)
			}
		})
		plain := createPlainDeployment(ctx, cs, f.Namespace, "plain", 0)

		webhook.stop(ctx, f)
		refused := fmt.Sprintf("failed calling webhook %q", webhookName)

		ginkgo.By("creating a Deployment that carries scheduling intent: rejected, naming the webhook")
		intent := builder.Deployment("with-intent", f.Namespace).Replicas(0).Recreate().Obj()
		gomega.Eventually(ctx, func() error {
			_, err := framework.Intent.CreateDeployment(ctx, intent, gang())
			return err
		}).WithTimeout(30*time.Second).WithPolling(time.Second).Should(gomega.MatchError(gomega.ContainSubstring(refused)),
			"a write carrying intent must fail closed while the webhook is down, with a message naming it")

		ginkgo.By("creating and updating a Deployment without intent: the webhook is not asked")
		createPlainDeployment(ctx, cs, f.Namespace, "plain-while-down", 1)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := cs.AppsV1().Deployments(f.Namespace).Get(ctx, plain.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			d.Spec.Template.Labels["touched"] = "while-the-webhook-is-down"
			_, err = cs.AppsV1().Deployments(f.Namespace).Update(ctx, d, metav1.UpdateOptions{})
			return err
		})
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "updating a Deployment without intent while the webhook is down")

		ginkgo.By("scaling a kube-system Deployment through its scale subresource: excluded by the namespaceSelector")
		gomega.Expect(scale(ctx, cs, system, 1)).To(gomega.Succeed(),
			"a kube-system scale request must not depend on the webhook (HPA, kubectl scale of system Deployments)")

		ginkgo.By("scaling a Deployment of an ordinary namespace: still checked, so it fails closed (the control: the selector is what lets kube-system through)")
		gomega.Expect(scale(ctx, cs, plain, 1)).To(gomega.MatchError(gomega.ContainSubstring(refused)),
			"a scale request outside the excluded namespaces must still reach the webhook")
	})
})

// createPlainDeployment creates a Deployment without scheduling intent.
func createPlainDeployment(ctx context.Context, cs kubernetes.Interface, namespace, name string, replicas int32) *appsv1.Deployment {
	ginkgo.GinkgoHelper()
	d, err := cs.AppsV1().Deployments(namespace).Create(ctx, builder.Deployment(name, namespace).Replicas(replicas).Request(corev1.ResourceCPU, "10m").Obj(), metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating Deployment %s/%s without intent", namespace, name)
	return d
}

// scale writes spec.replicas through the scale subresource, as kubectl
// scale and the HPA do.
func scale(ctx context.Context, cs kubernetes.Interface, d *appsv1.Deployment, replicas int32) error {
	_, err := cs.AppsV1().Deployments(d.Namespace).UpdateScale(ctx, d.Name, &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace},
		Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
	}, metav1.UpdateOptions{})
	return err
}

// stopComponent kills a component of the local cluster (its whole process
// group, as the cluster started it) and starts it again, with its own
// settings, when the spec ends.
func stopComponent(ctx context.Context, lc *localcluster.Cluster, component localcluster.Component) {
	ginkgo.GinkgoHelper()
	pid := lc.PIDs()[component]
	gomega.Expect(pid).NotTo(gomega.BeZero(), "%s has no process", component)
	ginkgo.By(fmt.Sprintf("stopping %s (pid %d)", component, pid))
	ginkgo.DeferCleanup(func(ctx context.Context) {
		ginkgo.By("starting " + string(component) + " again")
		gomega.Expect(lc.Restart(ctx, component, nil)).To(gomega.Succeed(), "starting %s again", component)
	})
	gomega.Expect(syscall.Kill(-pid, syscall.SIGKILL)).To(gomega.Succeed())
	gomega.Eventually(ctx, func() error { return syscall.Kill(pid, 0) }).WithTimeout(10*time.Second).WithPolling(100*time.Millisecond).
		Should(gomega.MatchError(syscall.ESRCH), "%s (pid %d) is still running", component, pid)
}
