package deployment

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
)

// Kubelet version skew (issue 22): KEP-6276 names the kubelet nowhere. Its
// gate's "Components depending on the feature gate: kube-controller-manager,
// kube-apiserver", and its Version Skew Strategy: "The feature requires
// GenericWorkload and the scheduling.k8s.io API versions to be active on the
// API server." So a gang Deployment's pods run on a kubelet a minor older
// than the control plane (make e2e-kind KIND_SKEW_WORKER=1) as anywhere. Of
// PodGroup-level claims on such a kubelet KEP-6276 says nothing; KEP-6277's
// sentence is asserted in suites/statefulset/kubeletskew.go.
var _ = ginkgo.Describe("Deployments on a kubelet older than the control plane", framework.KEP(6276), framework.KubeletSkew,
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment), func() {
		f := framework.New("deploy-kubelet-skew")

		ginkgo.It("runs a gang Deployment's pods there: the feature depends on kube-controller-manager and kube-apiserver, not the kubelet", func(ctx context.Context) {
			old := framework.RequireOldKubelet(ctx, f.ClientSet, framework.KubeletSkewGap)
			ginkgo.GinkgoWriter.Printf("older kubelet: %s\n", old)
			d := create(ctx, recreate(f, "gang", 2, "100m").PodTemplate(old.Pin).Obj(), gang(nil))
			a := apps.Deployment(d)
			apps.WaitForGang(ctx, f, a, 2, 2)
			state := apps.WaitForRunning(ctx, f, a, 2)
			for pod, node := range state.NodeOf {
				gomega.Expect(node).To(gomega.Equal(old.Node.Name), "pod %s must run on the older kubelet's node: %s", pod, state)
			}
			w := theWorkload(ctx, f, d)
			pg := apps.ThePodGroup(ctx, f, &w)
			framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{ClientSet: f.ClientSet, Namespace: f.Namespace, Name: pg.Name,
				Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionTrue})
		})
	})
