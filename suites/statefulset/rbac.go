package statefulset

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"

	"github.com/workload-aware/apps-harness/framework"
)

// KEP-6277 has no RBAC section; its Scalability section says what the
// StatefulSet controller does with the two resources: "uses informers for
// Workload and PodGroup objects" (list, watch), "CREATE Workload", "CREATE
// PodGroup", "PATCH Workload", "PATCH PodGroup" (the minCount on scale).
// The minCount write is read as either verb: a PATCH in the KEP's list, an
// update in the upstream controllers' usual style (and the reference's); the
// one the cluster grants is recorded. Get and delete are not required (the
// KEP: "The controller does not explicitly delete the Workload or PodGroup").
var _ = ginkgo.Describe("StatefulSet controller's permissions", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("sts-rbac")

		ginkgo.It("grants the statefulset controller's account the calls the KEP lists on workloads and podgroups (SubjectAccessReview)", framework.ID("S-I18"), func(ctx context.Context) {
			id := framework.ServiceAccountIdentity("kube-system", "statefulset-controller")
			var readings []string
			for _, resource := range []string{"workloads", "podgroups"} {
				granted := framework.GrantedVerbs(ctx, f, id, "scheduling.k8s.io", resource, "get", "list", "watch", "create", "update", "patch", "delete")
				gomega.Expect(granted).To(gomega.ContainElements("list", "watch", "create"),
					"%s may not use scheduling.k8s.io/%s through an informer (list, watch) and create it in all namespaces; granted %v", id, resource, granted)
				writes := slices.DeleteFunc(slices.Clone(granted), func(v string) bool { return v != "update" && v != "patch" })
				gomega.Expect(writes).NotTo(gomega.BeEmpty(),
					"%s may neither patch nor update scheduling.k8s.io/%s: it cannot write minCount on scale; granted %v", id, resource, granted)
				readings = append(readings, fmt.Sprintf("%s: minCount by %s", resource, strings.Join(writes, " or ")))
				logf("%s on scheduling.k8s.io/%s: %v", id, resource, granted)
			}
			framework.RecordReading(strings.Join(readings, "; "))
		})
	})
