package deployment

import (
	"strconv"
	"testing"

	"github.com/onsi/gomega"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A PodGroup as the apiserver stores it when the creating client did not send
// the finalizer (PodGroupProtection added it after the managedFields were
// computed) and a later client update did.
func TestManagersThatSetReadsFieldsV1(t *testing.T) {
	g := gomega.NewWithT(t)
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{
		Finalizers: []string{podGroupProtectionFinalizer},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "replicaset-controller", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:ownerReferences":{}},"f:spec":{"f:schedulingPolicy":{}}}`)}},
			{Manager: "other", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1",
				FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:finalizers":{".":{},"v:\"scheduling.k8s.io/podgroup-protection\"":{}}}}`)}},
			{Manager: "no-fields", Operation: metav1.ManagedFieldsOperationUpdate},
		},
	}}
	path := []string{"f:metadata", "f:finalizers", "v:" + strconv.Quote(podGroupProtectionFinalizer)}
	g.Expect(managersThatSet(pg, path...)).To(gomega.Equal([]string{"other (Apply)"}))

	pg.ManagedFields = pg.ManagedFields[:1]
	g.Expect(managersThatSet(pg, path...)).To(gomega.BeEmpty(), "the finalizer is owned by no manager: admission added it")
}

func TestPrunedJSONTreatsAbsentNullAndEmptyAlike(t *testing.T) {
	g := gomega.NewWithT(t)
	var none *schedulingv1beta1.PodGroupSchedulingConstraints
	g.Expect(prunedJSON(none)).To(gomega.Equal("null"))
	g.Expect(prunedJSON(&schedulingv1beta1.PodGroupSchedulingConstraints{})).To(gomega.Equal("null"), "topology: null")
	g.Expect(prunedJSON([]schedulingv1beta1.PodGroupResourceClaim{})).To(gomega.Equal("null"))
	// A union member is an empty object, and it counts.
	g.Expect(prunedJSON(&schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}})).To(gomega.MatchJSON(`{"all":{}}`))
	g.Expect(prunedJSON(&schedulingv1beta1.DisruptionMode{Single: &schedulingv1beta1.SingleDisruptionMode{}})).NotTo(
		gomega.MatchJSON(prunedJSON(&schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}})))
}
