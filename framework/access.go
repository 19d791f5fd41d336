package framework

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
)

// Identity is a user as the API server's authorizer sees it.
type Identity struct {
	User   string
	Groups []string
}

func (i Identity) String() string { return i.User }

// ServiceAccountIdentity is the identity a token of namespace/name
// authenticates as: the account's user, its groups and system:authenticated.
func ServiceAccountIdentity(namespace, name string) Identity {
	return Identity{
		User:   serviceaccount.MakeUsername(namespace, name),
		Groups: append(serviceaccount.MakeGroupNames(namespace), user.AllAuthenticated),
	}
}

// Can asks the API server (a SubjectAccessReview) whether id may do what
// attrs say: whatever grants it (RBAC, a webhook authorizer, a
// bootstrap policy), as the cluster under test decides.
func Can(ctx context.Context, f *Framework, id Identity, attrs authorizationv1.ResourceAttributes) bool {
	ginkgo.GinkgoHelper()
	review, err := f.ClientSet.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: id.User, Groups: id.Groups, ResourceAttributes: &attrs},
	}, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "SubjectAccessReview for %s", id)
	return review.Status.Allowed
}

// GrantedVerbs returns which of verbs id may use on group/resource in every
// namespace (what a ClusterRole bound cluster-wide gives).
func GrantedVerbs(ctx context.Context, f *Framework, id Identity, group, resource string, verbs ...string) []string {
	ginkgo.GinkgoHelper()
	var out []string
	for _, v := range verbs {
		if Can(ctx, f, id, authorizationv1.ResourceAttributes{Group: group, Resource: resource, Verb: v}) {
			out = append(out, v)
		}
	}
	return out
}
