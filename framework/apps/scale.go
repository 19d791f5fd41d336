package apps

import (
	"context"
	"fmt"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
)

// TryScale sets a's spec.replicas with an ordinary update through the intent
// seam (which keeps the stored intent as it is) and returns the server's
// answer, so specs can assert on a rejection.
func TryScale(ctx context.Context, f *framework.Framework, a App, replicas int32) error {
	var err error
	switch a.Kind {
	case KindDeployment:
		_, err = framework.Intent.UpdateDeployment(ctx, f.Namespace, a.Name, func(d *appsv1.Deployment, _ **framework.DeploymentScheduling) {
			d.Spec.Replicas = ptr.To(replicas)
		})
	case KindStatefulSet:
		_, err = framework.Intent.UpdateStatefulSet(ctx, f.Namespace, a.Name, func(s *appsv1.StatefulSet, _ **framework.StatefulSetScheduling) {
			s.Spec.Replicas = ptr.To(replicas)
		})
	default:
		err = fmt.Errorf("cannot scale %s", a)
	}
	return err
}

// Scale is TryScale that fails the spec on error.
func Scale(ctx context.Context, f *framework.Framework, a App, replicas int32) {
	gomega.ExpectWithOffset(1, TryScale(ctx, f, a, replicas)).To(gomega.Succeed(), "scaling %s to %d", a, replicas)
}

// TryScaleSubresource sets a's replicas through its /scale subresource, the
// way kubectl scale and autoscalers do, and returns the server's answer. The
// write is unconditional (no resourceVersion): the app's controller updates
// status meanwhile.
func TryScaleSubresource(ctx context.Context, f *framework.Framework, a App, replicas int32) error {
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: f.Namespace}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	var err error
	switch a.Kind {
	case KindDeployment:
		_, err = f.ClientSet.AppsV1().Deployments(f.Namespace).UpdateScale(ctx, a.Name, s, metav1.UpdateOptions{})
	case KindStatefulSet:
		_, err = f.ClientSet.AppsV1().StatefulSets(f.Namespace).UpdateScale(ctx, a.Name, s, metav1.UpdateOptions{})
	default:
		err = fmt.Errorf("cannot scale %s", a)
	}
	return err
}
