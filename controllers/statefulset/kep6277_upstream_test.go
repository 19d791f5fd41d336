package statefulset

import (
	"testing"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	appsv1defaults "k8s.io/kubernetes/pkg/apis/apps/v1"
	upstreamstatefulset "k8s.io/kubernetes/pkg/controller/statefulset"
	"k8s.io/utils/ptr"
)

// TestKEP6277UpstreamStatefulSetController runs the unchanged upstream
// StatefulSet controller over ControllerClient, as the controller manager
// wires it: a Parallel gang StatefulSet gets its Workload, then its PodGroup,
// then its pods (S-U1, S-U4), and a scale-down lowers both minCounts before
// the first pod is deleted (S-U6).
func TestKEP6277UpstreamStatefulSetController(t *testing.T) {
	t.Run("S-U1_S-U4_S-U6_upstream_controller", func(t *testing.T) {
		e := stNewEnv(t, stEnvOptions{})
		set := stSet(t, "db", 3, stGang())
		appsv1defaults.SetObjectDefaults_StatefulSet(set) // as the apiserver would
		if _, err := e.Client.AppsV1().StatefulSets(stNS).Create(e.Ctx, set, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ctx := klog.NewContext(e.Ctx, logr.Discard())
		ssc := upstreamstatefulset.NewStatefulSetController(ctx, e.apps.Core().V1().Pods(), e.apps.Apps().V1().StatefulSets(),
			e.apps.Core().V1().PersistentVolumeClaims(), e.apps.Apps().V1().ControllerRevisions(), e.cc)
		e.apps.Start(e.Ctx.Done())
		e.apps.WaitForCacheSync(e.Ctx.Done())
		go ssc.Run(ctx, 1)

		e.Eventually("three pods", func() bool {
			pods, err := e.Client.CoreV1().Pods(stNS).List(e.Ctx, metav1.ListOptions{})
			return err == nil && len(pods.Items) == 3
		})
		writes := e.Writes()
		iw, ipg, ipod := stIndex(writes, "create workloads"), stIndex(writes, "create podgroups"), stIndex(writes, "create pods")
		if iw < 0 || ipg < iw || ipod < ipg {
			t.Errorf("writes = %v, want the Workload, then the PodGroup, then pods", writes)
		}
		if e.Count("create", "workloads") != 1 || e.Count("create", "podgroups") != 1 {
			t.Errorf("writes = %v, want one Workload and one PodGroup create", writes)
		}
		w, pg := e.OnlyWorkload(), e.OnlyPodGroup()
		if stTemplateMin(w) != 3 || stGangMin(pg) != 3 {
			t.Errorf("minCounts %d/%d, want 3/3", stTemplateMin(w), stGangMin(pg))
		}
		for _, name := range []string{"db-0", "db-1", "db-2"} {
			stCheckGrouped(t, e.GetPod(name), set, pg)
		}

		// Scale down to 1.
		e.Client.ClearActions()
		scaled, err := e.Client.AppsV1().StatefulSets(stNS).Get(e.Ctx, "db", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		scaled.Spec.Replicas = ptr.To[int32](1)
		if _, err := e.Client.AppsV1().StatefulSets(stNS).Update(e.Ctx, scaled, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.Eventually("one pod left", func() bool {
			pods, err := e.Client.CoreV1().Pods(stNS).List(e.Ctx, metav1.ListOptions{})
			return err == nil && len(pods.Items) == 1
		})
		writes = e.Writes()
		uw, upg, dpod := stIndex(writes, "update workloads"), stIndex(writes, "update podgroups"), stIndex(writes, "delete pods")
		if uw < 0 || upg < uw || dpod < upg {
			t.Errorf("writes = %v, want the Workload and the PodGroup lowered before the first pod delete", writes)
		}
		if stTemplateMin(e.GetWorkload(w.Name)) != 1 || stGangMin(e.GetPodGroup(pg.Name)) != 1 {
			t.Errorf("minCounts %d/%d, want 1/1", stTemplateMin(e.GetWorkload(w.Name)), stGangMin(e.GetPodGroup(pg.Name)))
		}
		specWrites := 0
		for _, a := range e.Client.Actions() {
			if a.GetResource().Resource == "statefulsets" && (a.GetVerb() == "update" || a.GetVerb() == "patch") && a.GetSubresource() != "status" {
				specWrites++
			}
		}
		if specWrites != 1 {
			t.Errorf("%d StatefulSet spec writes, want only the test's scale (S-U8: nothing written back)", specWrites)
		}
		if got := e.GetPod("db-0").Labels[appsv1.StatefulSetPodNameLabel]; got != "db-0" {
			t.Errorf("remaining pod label %q", got)
		}
	})
}

func stIndex(list []string, item string) int {
	for i, s := range list {
		if s == item {
			return i
		}
	}
	return -1
}
