package statefulset

import (
	"context"
	"fmt"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// Well-known keys of KEP-6277 (managed-by) and KEP-6089 (the downward-mapping
// annotations a parent controller sets on a StatefulSet it composes).
const (
	managedByAnnotation               = "scheduling.k8s.io/managed-by"
	managedByStatefulSetController    = "statefulset-controller"
	groupTemplateNameAnnotation       = "scheduling.k8s.io/group-template-name"
	parentCompositePodGroupAnnotation = "scheduling.k8s.io/parent-compositepodgroup"
)

// blockerLabel marks the plain pods a spec creates to take capacity away.
const blockerLabel = "was-harness.io/blocker"

// gang is spec.scheduling with the gang policy and no minCount: in Alpha the
// controller derives it from spec.replicas (a user-set minCount is rejected).
func gang() *framework.StatefulSetScheduling {
	return &framework.StatefulSetScheduling{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{},
	}}
}

// basic is spec.scheduling with the basic policy spelled out.
func basic() *framework.StatefulSetScheduling {
	return &framework.StatefulSetScheduling{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Basic: &schedulingv1alpha3.WorkloadPodGroupBasicSchedulingPolicy{},
	}}
}

// withTopology adds a topology constraint on key.
func withTopology(cfg *framework.StatefulSetScheduling, key string) *framework.StatefulSetScheduling {
	cfg.SchedulingConstraints = &schedulingv1alpha3.WorkloadPodGroupSchedulingConstraints{
		Topology: []schedulingv1alpha3.TopologyConstraint{{Key: key}},
	}
	return cfg
}

// parallel is a Parallel StatefulSet of replicas pods requesting cpu each:
// the only pod management policy a gang may use.
func parallel(f *framework.Framework, name string, replicas int32, cpu string) *builder.StatefulSetWrapper {
	return builder.StatefulSet(name, f.Namespace).Replicas(replicas).Parallel().Request(corev1.ResourceCPU, cpu)
}

// create creates set with cfg through the intent seam and fails the spec on error.
func create(ctx context.Context, set *appsv1.StatefulSet, cfg *framework.StatefulSetScheduling) *appsv1.StatefulSet {
	created, err := framework.Intent.CreateStatefulSet(ctx, set, cfg)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "creating StatefulSet %s", set.Name)
	return created
}

// podName is the name of the pod of set with the given ordinal.
func podName(set *appsv1.StatefulSet, ordinal int) string {
	return fmt.Sprintf("%s-%d", set.Name, ordinal)
}

// createBlockers creates n plain pods (no PodGroup) of cpu each, waits until
// they run, and returns their selector: capacity taken away from a gang.
func createBlockers(ctx context.Context, f *framework.Framework, n int, cpu string) framework.PodsInput {
	for i := 0; i < n; i++ {
		p := builder.Pod(fmt.Sprintf("blocker-%d", i), f.Namespace).Label(blockerLabel, "true").Request(corev1.ResourceCPU, cpu).Obj()
		_, err := f.ClientSet.CoreV1().Pods(f.Namespace).Create(ctx, p, metav1.CreateOptions{})
		gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "creating blocker pod %s", p.Name)
	}
	in := framework.PodsInput{ClientSet: f.ClientSet, Namespace: f.Namespace, LabelSelector: blockerLabel + "=true"}
	framework.WaitForPodsRunning(ctx, in, n)
	return in
}

// requireNodes skips a spec that needs at least n schedulable nodes.
func requireNodes(fit framework.Capacity, n int) {
	if fit.Nodes < n {
		ginkgo.Skip(fmt.Sprintf("needs at least %d schedulable nodes, the cluster has %d", n, fit.Nodes))
	}
}

// logf writes a key observation into the spec's log.
func logf(format string, args ...any) {
	ginkgo.GinkgoWriter.Printf(strings.TrimSuffix(format, "\n")+"\n", args...)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// runningGang creates a Parallel gang StatefulSet of replicas pods of cpu
// each and waits until they run, in one Workload and one PodGroup at minCount
// replicas; it returns the StatefulSet, its App and that state.
func runningGang(ctx context.Context, f *framework.Framework, name string, replicas int32, cpu string) (*appsv1.StatefulSet, apps.App, apps.State) {
	ginkgo.GinkgoHelper()
	set := create(ctx, parallel(f, name, replicas, cpu).Obj(), gang())
	a := apps.StatefulSet(set)
	apps.WaitForRunning(ctx, f, a, int(replicas))
	return set, a, apps.WaitForMinCounts(ctx, f, a, replicas)
}

// objectsOf waits for a's one Workload and the one PodGroup that references it.
func objectsOf(ctx context.Context, f *framework.Framework, a apps.App) (schedulingv1beta1.Workload, schedulingv1beta1.PodGroup) {
	ginkgo.GinkgoHelper()
	w := apps.TheWorkload(ctx, f, a)
	return w, apps.ThePodGroup(ctx, f, &w)
}
