package deployment

import (
	"testing"

	"github.com/onsi/gomega"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
)

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
