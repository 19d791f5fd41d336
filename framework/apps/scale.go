package apps

import (
	"context"
	"fmt"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/util/retry"
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

// HPAUser is the identity the HorizontalPodAutoscaler controller writes
// with when kube-controller-manager runs with
// --use-service-account-credentials (kubeadm's default, and the local
// cluster's). The bootstrap policy grants it get and update on */scale.
const HPAUser = "system:serviceaccount:kube-system:horizontal-pod-autoscaler"

// TryScaleAsHPA sets a's replicas the way the HPA controller does
// (pkg/controller/podautoscaler): through the polymorphic scale client, which
// finds the Scale kind of a's /scale by discovery, a GET of the Scale, then an
// UPDATE carrying the GET's resourceVersion. The HPA retries a conflict at
// its next sync; this retries it at once, since the app's controller writes
// status meanwhile. The requests go as HPAUser where the harness may
// impersonate it, so an admission rule that treats the autoscaler apart is
// met too; as says which identity was used (and, if not the HPA's, why).
func TryScaleAsHPA(ctx context.Context, f *framework.Framework, a App, replicas int32) (as string, err error) {
	gr, err := scaleResource(a)
	if err != nil {
		return "", err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(framework.RESTConfig())
	if err != nil {
		return "", err
	}
	cached := memory.NewMemCacheClient(disc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)
	client := func(rc *rest.Config) (scale.ScalesGetter, error) {
		return scale.NewForConfig(rc, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(cached))
	}
	hpa := framework.RESTConfig()
	hpa.Impersonate = rest.ImpersonationConfig{UserName: HPAUser}
	scales, err := client(hpa)
	if err != nil {
		return "", err
	}
	as = HPAUser
	// A GET the HPA's identity may not make (no impersonation right, or no
	// bootstrap RBAC) is an environment limit, not an answer of the
	// implementation: fall back to the harness's own identity and say so.
	if _, err := scales.Scales(f.Namespace).Get(ctx, gr, a.Name, metav1.GetOptions{}); apierrors.IsForbidden(err) {
		as = fmt.Sprintf("the harness's own user (impersonating %s: %v)", HPAUser, err)
		if scales, err = client(framework.RESTConfig()); err != nil {
			return "", err
		}
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := scales.Scales(f.Namespace).Get(ctx, gr, a.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Replicas = replicas
		_, err = scales.Scales(f.Namespace).Update(ctx, gr, s, metav1.UpdateOptions{})
		return err
	})
	return as, err
}

// TryScalePatch sets a's replicas as kubectl scale does without
// preconditions: a merge patch of the /scale subresource.
func TryScalePatch(ctx context.Context, f *framework.Framework, a App, replicas int32) error {
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
	var err error
	switch a.Kind {
	case KindDeployment:
		_, err = f.ClientSet.AppsV1().Deployments(f.Namespace).Patch(ctx, a.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "scale")
	case KindStatefulSet:
		_, err = f.ClientSet.AppsV1().StatefulSets(f.Namespace).Patch(ctx, a.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "scale")
	default:
		err = fmt.Errorf("cannot scale %s", a)
	}
	return err
}

// scaleResource is a's resource, for the scale client.
func scaleResource(a App) (schema.GroupResource, error) {
	switch a.Kind {
	case KindDeployment:
		return appsv1.SchemeGroupVersion.WithResource("deployments").GroupResource(), nil
	case KindStatefulSet:
		return appsv1.SchemeGroupVersion.WithResource("statefulsets").GroupResource(), nil
	}
	return schema.GroupResource{}, fmt.Errorf("cannot scale %s", a)
}
