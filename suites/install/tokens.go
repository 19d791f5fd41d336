package install

import (
	"context"
	"fmt"
	"slices"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"

	"github.com/workload-aware/apps-harness/api/cluster"
	"github.com/workload-aware/apps-harness/deploy"
	"github.com/workload-aware/apps-harness/framework"
)

// identity is who the API server is asked about.
type identity struct {
	user   string
	groups []string
	// tokens are the kube-system accounts it may request tokens for.
	tokens []string
}

func (i identity) String() string { return i.user }

// controllerAccounts are the kube-system service accounts the controllers
// run as: named after the kube-controller-manager controllers they replace,
// as kube-controller-manager names them with --use-service-account-credentials.
var controllerAccounts = cluster.ReplacedKubeControllers

var _ = ginkgo.Describe("Install of the reference implementation: permissions", framework.Harness, func() {
	f := framework.New("install-rbac")

	// The path to cluster-admin this closes: a token for any kube-system
	// account (clusterrole-aggregation-controller may escalate) would make
	// whoever takes over the pod cluster-admin.
	ginkgo.It("lets the controller identity request tokens for its three controller accounts in kube-system and for no other account (SubjectAccessReview)", func(ctx context.Context) {
		identities := tokenIdentities(ctx, f)
		if len(identities) == 0 {
			ginkgo.Skip("neither the harness's local cluster with the reference add-on nor deploy/ installed: no identity of the reference implementation to ask about")
		}
		accounts, err := f.ClientSet.CoreV1().ServiceAccounts("kube-system").List(ctx, metav1.ListOptions{})
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		names := sets.New[string]()
		for _, sa := range accounts.Items {
			names.Insert(sa.Name)
		}
		for _, name := range controllerAccounts {
			gomega.Expect(names.Has(name)).To(gomega.BeTrue(),
				"kube-system/%s does not exist: the install must create the controllers' accounts (the controller side may not)", name)
		}
		// An account that does not exist yet: whoever may create it later
		// must not already hold its token.
		names.Insert("was-harness-not-yet-created")
		gomega.Expect(names.Len()).To(gomega.BeNumerically(">", len(controllerAccounts)+1),
			"kube-system holds only the controllers' accounts: the spec would prove nothing about the others")

		for _, id := range identities {
			ginkgo.By(fmt.Sprintf("asking about %s for %d kube-system accounts", id, names.Len()))
			var allowed []string
			for _, name := range sets.List(names) {
				if can(ctx, f, id, authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "create", Resource: "serviceaccounts", Subresource: "token", Name: name}) {
					allowed = append(allowed, name)
				}
			}
			gomega.Expect(allowed).To(gomega.ConsistOf(id.tokens), "%s may request tokens for exactly these kube-system accounts", id)
			gomega.Expect(can(ctx, f, id, authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "create", Resource: "serviceaccounts"})).To(gomega.BeFalse(),
				"%s may create kube-system ServiceAccounts (and so name one it then holds a token for)", id)
			gomega.Expect(can(ctx, f, id, authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "get", Resource: "secrets"})).To(gomega.BeFalse(),
				"%s may read kube-system Secrets", id)
		}
	})
})

// tokenIdentities are the reference implementation's identities present on
// the cluster: the local cluster's add-on user, and deploy/'s two
// ServiceAccounts when deploy/ is installed (kind). The webhook's account may
// request no token at all.
func tokenIdentities(ctx context.Context, f *framework.Framework) []identity {
	var out []identity
	if lc := framework.LocalCluster; lc != nil && slices.Contains(lc.RunningComponents(), framework.ReferenceControllerManager) {
		out = append(out, identity{
			user:   componentUser(lc, framework.ReferenceControllerManager),
			groups: []string{"system:authenticated"},
			tokens: controllerAccounts,
		})
	}
	d := rendered()
	for _, name := range []string{"was-controller-manager", "was-webhook"} {
		sa := get[corev1.ServiceAccount](d, "ServiceAccount", deploy.Namespace, name)
		_, err := f.ClientSet.CoreV1().ServiceAccounts(sa.Namespace).Get(ctx, sa.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue // deploy/ is not installed
		}
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		id := identity{
			user:   serviceaccount.MakeUsername(sa.Namespace, sa.Name),
			groups: serviceaccount.MakeGroupNames(sa.Namespace),
		}
		if name == "was-controller-manager" {
			id.tokens = controllerAccounts
		}
		out = append(out, id)
	}
	return out
}

// can asks the API server whether id may do what attrs say.
func can(ctx context.Context, f *framework.Framework, id identity, attrs authorizationv1.ResourceAttributes) bool {
	ginkgo.GinkgoHelper()
	return framework.Can(ctx, f, framework.Identity{User: id.user, Groups: id.groups}, attrs)
}
