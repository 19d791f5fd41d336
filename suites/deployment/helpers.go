package deployment

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// gang is spec.scheduling with a gang policy; minCount nil lets the controller derive it.
func gang(minCount *int32) *framework.DeploymentScheduling {
	return &framework.DeploymentScheduling{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{MinCount: minCount},
	}}
}

// withTopology adds a topology constraint on key.
func withTopology(cfg *framework.DeploymentScheduling, key string) *framework.DeploymentScheduling {
	cfg.SchedulingConstraints = &schedulingv1alpha3.WorkloadPodGroupSchedulingConstraints{
		Topology: []schedulingv1alpha3.TopologyConstraint{{Key: key}},
	}
	return cfg
}

// recreate is a Recreate Deployment of replicas pods requesting cpu each.
func recreate(f *framework.Framework, name string, replicas int32, cpu string) *builder.DeploymentWrapper {
	return builder.Deployment(name, f.Namespace).Replicas(replicas).Recreate().Request(corev1.ResourceCPU, cpu)
}

// create creates d with cfg through the intent seam and fails the spec on error.
func create(ctx context.Context, d *appsv1.Deployment, cfg *framework.DeploymentScheduling) *appsv1.Deployment {
	created, err := framework.Intent.CreateDeployment(ctx, d, cfg)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating Deployment %s", d.Name)
	return created
}

// podsOf selects the Deployment's pods.
func podsOf(f *framework.Framework, d *appsv1.Deployment) framework.PodsInput {
	return framework.PodsInput{ClientSet: f.ClientSet, Namespace: f.Namespace, LabelSelector: builder.AppLabel + "=" + d.Name}
}

// workloadsOf returns the Workloads controlled by d.
func workloadsOf(ctx context.Context, f *framework.Framework, d *appsv1.Deployment) []schedulingv1beta1.Workload {
	list, err := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).List(ctx, metav1.ListOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	var out []schedulingv1beta1.Workload
	for _, w := range list.Items {
		if metav1.IsControlledBy(&w, d) {
			out = append(out, w)
		}
	}
	return out
}

// theWorkload waits until d controls exactly one Workload and returns it.
func theWorkload(ctx context.Context, f *framework.Framework, d *appsv1.Deployment) schedulingv1beta1.Workload {
	var got []schedulingv1beta1.Workload
	gomega.Eventually(ctx, func(ctx context.Context) []schedulingv1beta1.Workload {
		got = workloadsOf(ctx, f, d)
		return got
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.HaveLen(1),
		"waiting for exactly one Workload controlled by Deployment %s", d.Name)
	return got[0]
}

// podGroups lists the namespace's PodGroups.
func podGroups(ctx context.Context, f *framework.Framework) []schedulingv1beta1.PodGroup {
	list, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).List(ctx, metav1.ListOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return list.Items
}

// replicaSets lists the ReplicaSets controlled by d.
func replicaSets(ctx context.Context, f *framework.Framework, d *appsv1.Deployment) []appsv1.ReplicaSet {
	list, err := f.ClientSet.AppsV1().ReplicaSets(f.Namespace).List(ctx, metav1.ListOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	var out []appsv1.ReplicaSet
	for _, rs := range list.Items {
		if metav1.IsControlledBy(&rs, d) {
			out = append(out, rs)
		}
	}
	return out
}

// gangState is what a spec expects of a gang Deployment's scheduling objects.
type gangState struct {
	WorkloadMinCount int32
	// PodGroups lists "name=minCount" of the namespace's live PodGroups.
	PodGroups []string
}

func (s gangState) String() string {
	return fmt.Sprintf("workload minCount %d, podgroups %v", s.WorkloadMinCount, s.PodGroups)
}

// readGangState reads the Workload's template minCount and the live PodGroups.
func readGangState(ctx context.Context, f *framework.Framework, d *appsv1.Deployment) gangState {
	s := gangState{PodGroups: []string{}}
	if ws := workloadsOf(ctx, f, d); len(ws) == 1 {
		s.WorkloadMinCount = framework.WorkloadMinCount(&ws[0])
	}
	for _, pg := range podGroups(ctx, f) {
		if pg.DeletionTimestamp == nil {
			s.PodGroups = append(s.PodGroups, fmt.Sprintf("%s=%d", pg.Name, framework.PodGroupMinCount(&pg)))
		}
	}
	return s
}

// waitForGangState waits until the Workload's minCount is want and the only
// live PodGroup is the active ReplicaSet's with minCount want (or none, when
// podGroupWanted is false).
func waitForGangState(ctx context.Context, f *framework.Framework, d *appsv1.Deployment, want int32, podGroupWanted bool) {
	gomega.Eventually(ctx, func(ctx context.Context) gangState {
		return readGangState(ctx, f, d)
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.SatisfyAll(
		gomega.HaveField("WorkloadMinCount", want),
		gomega.HaveField("PodGroups", gomega.HaveLen(map[bool]int{true: 1, false: 0}[podGroupWanted])),
		gomega.HaveField("PodGroups", gomega.Or(gomega.BeEmpty(), gomega.HaveEach(gomega.HaveSuffix(fmt.Sprintf("=%d", want))))),
	), "waiting for Workload minCount %d and %v PodGroup(s) of minCount %d", want, podGroupWanted, want)
}

// scale sets spec.replicas through an ordinary update.
func scale(ctx context.Context, f *framework.Framework, d *appsv1.Deployment, replicas int32) error {
	_, err := framework.Intent.UpdateDeployment(ctx, f.Namespace, d.Name, func(d *appsv1.Deployment, _ **framework.DeploymentScheduling) {
		d.Spec.Replicas = ptr.To(replicas)
	})
	return err
}

// expectRejected asserts err is an admission rejection that names field.
func expectRejected(err error, field string) {
	gomega.ExpectWithOffset(1, err).To(gomega.HaveOccurred(), "the request was accepted; expected a rejection naming %s", field)
	gomega.ExpectWithOffset(1, err.Error()).To(gomega.ContainSubstring(field), "the rejection does not name %s", field)
	ginkgo.GinkgoWriter.Printf("rejected as expected: %v\n", err)
}
