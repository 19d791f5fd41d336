package deployment

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/workload-aware/apps-harness/framework"
)

// KEP-6276, Feature Gate and RBAC: "The deployment-controller ClusterRole
// grants get, list, watch, create, update, and patch on
// scheduling.k8s.io/workloads. The replicaset-controller ClusterRole grants:
// get, list, and watch on scheduling.k8s.io/workloads. get, list, watch,
// create, update, patch, and delete on scheduling.k8s.io/podgroups." Asked
// of the cluster under test, for the controllers' kube-system service
// accounts (kube-controller-manager's --use-service-account-credentials
// identities, which those ClusterRoles are bound to), whatever grants it.
var _ = ginkgo.Describe("Deployment controllers' permissions", framework.KEP(6276),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment), func() {
		f := framework.New("deploy-rbac")

		ginkgo.It("grants the deployment and replicaset controllers' accounts the verbs the KEP lists on workloads and podgroups (SubjectAccessReview)", framework.ID("D-I10"), func(ctx context.Context) {
			for _, want := range []struct {
				account, resource string
				verbs             []string
			}{
				{"deployment-controller", "workloads", []string{"get", "list", "watch", "create", "update", "patch"}},
				{"replicaset-controller", "workloads", []string{"get", "list", "watch"}},
				{"replicaset-controller", "podgroups", []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
			} {
				id := framework.ServiceAccountIdentity("kube-system", want.account)
				granted := framework.GrantedVerbs(ctx, f, id, "scheduling.k8s.io", want.resource, want.verbs...)
				gomega.Expect(granted).To(gomega.Equal(want.verbs),
					"%s may not use every verb KEP-6276 lists on scheduling.k8s.io/%s in all namespaces", id, want.resource)
			}
		})
	})
