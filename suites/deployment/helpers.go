package deployment

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
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

// The Deployment specs name their app by *appsv1.Deployment; the functions
// below bind it to framework/apps, the one model of an app's state, so the
// specs read as before and no state logic lives in this suite.

// podsOf selects the Deployment's pods.
func podsOf(f *framework.Framework, d *appsv1.Deployment) framework.PodsInput {
	return apps.Pods(f, apps.Deployment(d))
}

// workloadsOf returns the Workloads controlled by d.
func workloadsOf(ctx context.Context, f *framework.Framework, d *appsv1.Deployment) []schedulingv1beta1.Workload {
	return apps.Workloads(ctx, f, apps.Deployment(d))
}

// theWorkload waits until d controls exactly one Workload and returns it.
func theWorkload(ctx context.Context, f *framework.Framework, d *appsv1.Deployment) schedulingv1beta1.Workload {
	ginkgo.GinkgoHelper()
	return apps.TheWorkload(ctx, f, apps.Deployment(d))
}

// podGroups lists the namespace's PodGroups, terminating ones included.
func podGroups(ctx context.Context, f *framework.Framework) []schedulingv1beta1.PodGroup {
	return apps.ListPodGroups(ctx, f)
}

// replicaSets lists the ReplicaSets controlled by d.
func replicaSets(ctx context.Context, f *framework.Framework, d *appsv1.Deployment) []appsv1.ReplicaSet {
	return apps.ReplicaSets(ctx, f, apps.Deployment(d))
}

// podUIDs returns the UIDs of the Deployment's live pods, as a set.
func podUIDs(ctx context.Context, f *framework.Framework, d *appsv1.Deployment) map[string]bool {
	out := map[string]bool{}
	for _, uid := range apps.Read(ctx, f, apps.Deployment(d)).PodUIDs() {
		out[string(uid)] = true
	}
	return out
}

// waitForGangState waits until d's one Workload is at minCount want and its
// only PodGroup, live, is at minCount want too; or, when podGroupWanted is
// false, until d has no PodGroup at all (zero replicas).
func waitForGangState(ctx context.Context, f *framework.Framework, d *appsv1.Deployment, want int32, podGroupWanted bool) apps.State {
	ginkgo.GinkgoHelper()
	if podGroupWanted {
		return apps.WaitForMinCounts(ctx, f, apps.Deployment(d), want)
	}
	return apps.WaitForWorkloadOnly(ctx, f, apps.Deployment(d), want)
}

// scale sets spec.replicas through an ordinary update and returns the
// server's answer.
func scale(ctx context.Context, f *framework.Framework, d *appsv1.Deployment, replicas int32) error {
	return apps.TryScale(ctx, f, apps.Deployment(d), replicas)
}

// expectOwner asserts refs contain exactly one reference to the named object
// with the given controller flag.
func expectOwner(refs []metav1.OwnerReference, apiVersion, kind, name, uid string, controller bool) {
	ginkgo.GinkgoHelper()
	apps.ExpectOwner(refs, apps.Owner{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid)}, controller)
}

// expectRejected asserts err rejects the request at one of paths (or below)
// with one of types: the KEPs fix the rule, not the wording, so the field
// and the error type are what a vendor's webhook, ValidatingAdmissionPolicy
// or native validation must agree on. In annotation mode a path under
// spec.scheduling may be reported as the intent annotation, the field the
// user wrote.
func expectRejected(err error, types []field.ErrorType, paths ...string) {
	ginkgo.GinkgoHelper()
	framework.ExpectRejected(err, framework.Rejection{Paths: paths, Types: types, Annotation: framework.Intent.DeploymentAnnotation()})
}

// Error types the KEP's rules allow. The KEP names a type only through its
// markers: +k8s:forbidden (Forbidden), +k8s:update=NoSet/NoUnset and
// +k8s:immutable (Invalid, or Forbidden for list items, in
// k8s.io/apimachinery/pkg/api/validate/update.go); a hand-written rule that
// says "rejected" may use either.
var (
	forbidden   = []field.ErrorType{field.ErrorTypeForbidden}
	rejected    = []field.ErrorType{field.ErrorTypeInvalid, field.ErrorTypeForbidden}
	notRecreate = []field.ErrorType{field.ErrorTypeInvalid, field.ErrorTypeForbidden, field.ErrorTypeNotSupported}
	structural  = []field.ErrorType{field.ErrorTypeInvalid, field.ErrorTypeForbidden, field.ErrorTypeRequired}
	tooMany     = []field.ErrorType{field.ErrorTypeTooMany, field.ErrorTypeInvalid, field.ErrorTypeForbidden}
	duplicate   = []field.ErrorType{field.ErrorTypeDuplicate, field.ErrorTypeInvalid}
)
