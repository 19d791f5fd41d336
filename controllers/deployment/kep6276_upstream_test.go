package deployment

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	upstreamdeployment "k8s.io/kubernetes/pkg/controller/deployment"
	"k8s.io/utils/ptr"
)

// TestKEP6276UpstreamDeploymentController runs the unchanged upstream
// Deployment controller over DeploymentControllerClient: the Workload is
// created before its first ReplicaSet (D-U1, the D-I2 ordering), and the
// ReplicaSet the controller names is the PodGroup's name (D-U5 naming), also
// for a 253-character Deployment name.
func TestKEP6276UpstreamDeploymentController(t *testing.T) {
	for _, tc := range []struct{ test, name string }{
		{"D-U1_D-U5_upstream_controller_short_name", "inference-server"},
		{"D-U1_D-U5_upstream_controller_253_char_name", ktLongName(253)},
	} {
		t.Run(tc.test, func(t *testing.T) {
			e := ktNewEnv(t, ktEnvOptions{})
			d := ktDeployment(t, tc.name, ptr.To[int32](3), ktFullIntent())
			d.UID = "upstream-deploy-uid"
			if _, err := e.Client.AppsV1().Deployments(ktNS).Create(e.Ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			apps := e.apps.Apps().V1()
			dc, err := upstreamdeployment.NewDeploymentController(e.Ctx, apps.Deployments(), apps.ReplicaSets(), e.apps.Core().V1().Pods(), e.r.DeploymentControllerClient(e.Client))
			if err != nil {
				t.Fatal(err)
			}
			e.apps.Start(e.Ctx.Done())
			e.apps.WaitForCacheSync(e.Ctx.Done())
			go dc.Run(e.Ctx, 1)

			var rs *appsv1.ReplicaSet
			e.Eventually("the upstream controller to create a ReplicaSet", func() bool {
				list, err := e.Client.AppsV1().ReplicaSets(ktNS).List(e.Ctx, metav1.ListOptions{})
				if err != nil || len(list.Items) == 0 {
					return false
				}
				rs = &list.Items[0]
				return true
			})
			var order []string
			for _, w := range e.Writes() {
				if w == "create workloads" || w == "create replicasets" {
					order = append(order, w)
				}
			}
			if len(order) < 2 || order[0] != "create workloads" || order[1] != "create replicasets" {
				t.Errorf("writes = %v, want the Workload created before the ReplicaSet", order)
			}
			if n := e.Count("create", "workloads"); n != 1 {
				t.Errorf("%d Workload creates, want 1", n)
			}
			hash := rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
			if hash == "" || rs.Name != PodGroupName(d.Name, hash) {
				t.Errorf("ReplicaSet %q (hash %q), PodGroupName %q: want equal", rs.Name, hash, PodGroupName(d.Name, hash))
			}
			w := e.GetWorkload(WorkloadName(d))
			if m := TemplateMinCount(w); m == nil || *m != 3 || !metav1.IsControlledBy(w, d) {
				t.Errorf("Workload = %+v, want controlled by the Deployment with minCount 3", w)
			}
		})
	}
}

// ktLongName is a valid DNS subdomain of n characters with dots, ending with
// an alphanumeric character.
func ktLongName(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
		if i%20 == 19 && i < n-1 {
			b[i] = '.'
		}
	}
	return string(b)
}
