package apps

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
)

// Owner identifies the object an ownerReference must point at.
type Owner struct {
	APIVersion, Kind, Name string
	UID                    types.UID
}

// OwnerStatefulSet is s as an owner.
func OwnerStatefulSet(s *appsv1.StatefulSet) Owner {
	return Owner{"apps/v1", "StatefulSet", s.Name, s.UID}
}

// OwnerDeployment is d as an owner.
func OwnerDeployment(d *appsv1.Deployment) Owner {
	return Owner{"apps/v1", "Deployment", d.Name, d.UID}
}

// OwnerReplicaSet is rs as an owner.
func OwnerReplicaSet(rs *appsv1.ReplicaSet) Owner {
	return Owner{"apps/v1", "ReplicaSet", rs.Name, rs.UID}
}

// OwnerWorkload is w as an owner.
func OwnerWorkload(w *schedulingv1beta1.Workload) Owner {
	return Owner{"scheduling.k8s.io/v1beta1", "Workload", w.Name, w.UID}
}

// OwnerPodGroup is pg as an owner.
func OwnerPodGroup(pg *schedulingv1beta1.PodGroup) Owner {
	return Owner{"scheduling.k8s.io/v1beta1", "PodGroup", pg.Name, pg.UID}
}

// ExpectOwner asserts refs hold exactly one reference to o, with o's API
// version and UID, and the given controller flag.
func ExpectOwner(refs []metav1.OwnerReference, o Owner, controller bool) {
	ginkgo.GinkgoHelper()
	r := theRef(refs, o)
	gomega.Expect(r.APIVersion).To(gomega.Equal(o.APIVersion), "ownerReference to %s %s", o.Kind, o.Name)
	gomega.Expect(r.UID).To(gomega.Equal(o.UID), "ownerReference to %s %s", o.Kind, o.Name)
	gomega.Expect(ptr.Deref(r.Controller, false)).To(gomega.Equal(controller), "controller flag of the ownerReference to %s %s", o.Kind, o.Name)
}

// ExpectBlocksOwnerDeletion asserts the one reference to o in refs sets
// blockOwnerDeletion: true, so a foreground deletion of o waits for it.
func ExpectBlocksOwnerDeletion(refs []metav1.OwnerReference, o Owner) {
	ginkgo.GinkgoHelper()
	r := theRef(refs, o)
	gomega.Expect(ptr.Deref(r.BlockOwnerDeletion, false)).To(gomega.BeTrue(), "blockOwnerDeletion of the ownerReference to %s %s: %v", o.Kind, o.Name, refs)
}

func theRef(refs []metav1.OwnerReference, o Owner) metav1.OwnerReference {
	ginkgo.GinkgoHelper()
	var found []metav1.OwnerReference
	for _, r := range refs {
		if r.Kind == o.Kind && r.Name == o.Name {
			found = append(found, r)
		}
	}
	gomega.Expect(found).To(gomega.HaveLen(1), "ownerReferences %v: want one to %s %s", refs, o.Kind, o.Name)
	return found[0]
}

// ExpectNoOwnerOfKind asserts refs name no object of kind.
func ExpectNoOwnerOfKind(refs []metav1.OwnerReference, kind string) {
	ginkgo.GinkgoHelper()
	for _, r := range refs {
		gomega.Expect(r.Kind).NotTo(gomega.Equal(kind), "unexpected ownerReference %v", r)
	}
}

// ExpectPodsInGroup asserts a has exactly want pods, each naming pg in
// spec.schedulingGroup.podGroupName, controlled by controller (the
// StatefulSet, or a Deployment's ReplicaSet) and owned, not controlled, by pg.
func ExpectPodsInGroup(ctx context.Context, f *framework.Framework, a App, controller Owner, pg *schedulingv1beta1.PodGroup, want int) {
	ginkgo.GinkgoHelper()
	pods, err := framework.ListPods(ctx, Pods(f, a))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(pods).To(gomega.HaveLen(want), "pods of %s: %v", a, Names(pods))
	for _, p := range pods {
		gomega.Expect(p.Spec.SchedulingGroup).NotTo(gomega.BeNil(), "pod %s has no spec.schedulingGroup", p.Name)
		gomega.Expect(p.Spec.SchedulingGroup.PodGroupName).To(gomega.HaveValue(gomega.Equal(pg.Name)), "pod %s must name PodGroup %s", p.Name, pg.Name)
		ExpectOwner(p.OwnerReferences, controller, true)
		ExpectOwner(p.OwnerReferences, OwnerPodGroup(pg), false)
	}
}
