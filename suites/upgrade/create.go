package upgrade

import (
	"context"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// The upgrade specs drive Deployments and StatefulSets through gate changes
// and look at both kinds the same way, through framework/apps. This file
// creates them: small pods, with or without scheduling intent, through the
// intent seam.

func gangDeployment() *framework.DeploymentScheduling {
	return &framework.DeploymentScheduling{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{},
	}}
}

func gangStatefulSet() *framework.StatefulSetScheduling {
	return &framework.StatefulSetScheduling{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{},
	}}
}

func basicStatefulSet() *framework.StatefulSetScheduling {
	return &framework.StatefulSetScheduling{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Basic: &schedulingv1alpha3.WorkloadPodGroupBasicSchedulingPolicy{},
	}}
}

// tryCreateDeployment creates a Recreate Deployment of small pods with cfg
// (nil: no scheduling intent) through the intent seam.
func tryCreateDeployment(ctx context.Context, f *framework.Framework, name string, replicas int32, cfg *framework.DeploymentScheduling) (*appsv1.Deployment, error) {
	d := builder.Deployment(name, f.Namespace).Replicas(replicas).Recreate().Request(corev1.ResourceCPU, "100m").Obj()
	return framework.Intent.CreateDeployment(ctx, d, cfg)
}

func createDeployment(ctx context.Context, f *framework.Framework, name string, replicas int32, cfg *framework.DeploymentScheduling) *appsv1.Deployment {
	created, err := tryCreateDeployment(ctx, f, name, replicas, cfg)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "creating Deployment %s", name)
	return created
}

// tryCreateStatefulSet creates a StatefulSet of small pods with cfg (nil: no
// scheduling intent); parallel selects podManagementPolicy Parallel.
func tryCreateStatefulSet(ctx context.Context, f *framework.Framework, name string, replicas int32, parallel bool, cfg *framework.StatefulSetScheduling) (*appsv1.StatefulSet, error) {
	w := builder.StatefulSet(name, f.Namespace).Replicas(replicas).Request(corev1.ResourceCPU, "100m")
	if parallel {
		w = w.Parallel()
	} else {
		w = w.OrderedReady()
	}
	return framework.Intent.CreateStatefulSet(ctx, w.Obj(), cfg)
}

func createStatefulSet(ctx context.Context, f *framework.Framework, name string, replicas int32, parallel bool, cfg *framework.StatefulSetScheduling) *appsv1.StatefulSet {
	created, err := tryCreateStatefulSet(ctx, f, name, replicas, parallel, cfg)
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "creating StatefulSet %s", name)
	return created
}

// expectCreations asserts how many Workloads and PodGroups were created in
// the namespace since h started: the KEPs' "no duplicates". Every creation is
// seen by a watch, so a duplicate that existed only for a moment counts too.
func expectCreations(h *framework.WriteHistory, workloads, podGroups int) {
	gomega.ExpectWithOffset(1, h.Creations("workloads")).To(gomega.HaveLen(workloads), "Workload creations: %s", h)
	gomega.ExpectWithOffset(1, h.Creations("podgroups")).To(gomega.HaveLen(podGroups), "PodGroup creations: %s", h)
}
