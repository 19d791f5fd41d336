package admission

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
)

// DeploymentReader is the webhook's GetDeployment for scale reviews. It
// answers from an informer's cache, so a burst of reviews costs no API
// requests, and reads the API server only when the cache does not hold the
// version the review is about (a Deployment created or changed a moment
// ago). That live read is bounded by Timeout, well under the registration's
// timeoutSeconds, so a slow API server makes the review fail closed in time
// rather than let the API server time the webhook out.
type DeploymentReader struct {
	Cache   appslisters.DeploymentLister
	Client  appsv1client.DeploymentsGetter
	Timeout time.Duration
}

// Get returns the Deployment namespace/name at resourceVersion, the
// version of the stored Deployment the scale applies to (the review's
// oldObject carries it); "" takes whatever the cache holds, or a live read.
func (r *DeploymentReader) Get(ctx context.Context, namespace, name, resourceVersion string) (*appsv1.Deployment, error) {
	if r.Cache != nil {
		d, err := r.Cache.Deployments(namespace).Get(name)
		switch {
		case err == nil && (resourceVersion == "" || d.ResourceVersion == resourceVersion):
			return d, nil
		case err != nil && !apierrors.IsNotFound(err):
			return nil, err
		}
	}
	if r.Client == nil {
		return nil, fmt.Errorf("deployment %s/%s at resourceVersion %q is not in the cache", namespace, name, resourceVersion)
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	return r.Client.Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
}

// lastApplied is kubectl's copy of the whole object, as large as the object.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// TrimForScaleReviews is the cache's transform: a scale review needs the
// Deployment's metadata (its intent is an annotation) and nothing of its
// pod template or status, which make up most of its size. Keeping only
// what ValidateScale reads bounds the webhook's memory by the number of
// Deployments, not their size.
func TrimForScaleReviews(obj any) (any, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return obj, nil // a tombstone: nothing to trim
	}
	trimmed := &appsv1.Deployment{ObjectMeta: *d.ObjectMeta.DeepCopy()}
	trimmed.ManagedFields = nil
	delete(trimmed.Annotations, lastApplied)
	trimmed.Spec.Replicas = d.Spec.Replicas
	return trimmed, nil
}
