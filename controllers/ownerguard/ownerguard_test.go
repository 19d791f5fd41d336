package ownerguard

import (
	"context"
	"errors"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func TestCheck(t *testing.T) {
	cached := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d", UID: "uid-1"}}
	live := func(obj *appsv1.Deployment, err error) Getter[*appsv1.Deployment] {
		return func(context.Context, string, metav1.GetOptions) (*appsv1.Deployment, error) { return obj, err }
	}
	terminating := cached.DeepCopy()
	terminating.DeletionTimestamp = ptr.To(metav1.Now())
	replaced := cached.DeepCopy()
	replaced.UID = "uid-2"
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, "d")
	unavailable := apierrors.NewServiceUnavailable("etcd is down")

	for _, tc := range []struct {
		name     string
		cached   *appsv1.Deployment
		get      Getter[*appsv1.Deployment]
		gone     bool
		otherErr bool
	}{
		{name: "live and the same object", cached: cached, get: live(cached, nil)},
		{name: "terminating in the cache (no read needed)", cached: terminating, get: live(nil, unavailable), gone: true},
		{name: "terminating on the server", cached: cached, get: live(terminating, nil), gone: true},
		{name: "deleted behind a stale cache", cached: cached, get: live(nil, notFound), gone: true},
		{name: "replaced under the same name", cached: cached, get: live(replaced, nil), gone: true},
		{name: "the read fails: an error to retry, not gone", cached: cached, get: live(nil, unavailable), otherErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(context.Background(), "Deployment", tc.cached, tc.get)
			switch {
			case tc.gone && !errors.Is(err, ErrOwnerGone):
				t.Fatalf("Check = %v, want ErrOwnerGone", err)
			case tc.otherErr && (err == nil || errors.Is(err, ErrOwnerGone)):
				t.Fatalf("Check = %v, want the read's error", err)
			case !tc.gone && !tc.otherErr && err != nil:
				t.Fatalf("Check = %v, want nil", err)
			}
			if Ignore(err) != nil && !tc.otherErr {
				t.Fatalf("Ignore(%v) kept an owner-gone error", err)
			}
		})
	}
}
