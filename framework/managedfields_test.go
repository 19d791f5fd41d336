package framework

import (
	"context"
	"testing"

	"github.com/onsi/gomega"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingv1beta1ac "k8s.io/client-go/applyconfigurations/scheduling/v1beta1"

	"github.com/workload-aware/apps-harness/internal/apitest"
)

const (
	protection = "scheduling.k8s.io/podgroup-protection"
	setUID     = "3f1c2a54-7b8e-4d0a-9a51-0c6a2f3e9b11"
)

func entry(manager string, op metav1.ManagedFieldsOperationType, subresource, fields string) metav1.ManagedFieldsEntry {
	e := metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: subresource, APIVersion: "scheduling.k8s.io/v1beta1"}
	if fields != "" {
		e.FieldsType = "FieldsV1"
		e.FieldsV1 = &metav1.FieldsV1{Raw: []byte(fields)}
	}
	return e
}

// The keys structured-merge-diff writes: a set member by its JSON value, a
// list-map member by its JSON keys.
func TestFieldPathsUseTheFieldsV1Keys(t *testing.T) {
	g := gomega.NewWithT(t)
	g.Expect(FinalizerField(protection)).To(gomega.Equal([]string{"f:metadata", "f:finalizers", `v:"scheduling.k8s.io/podgroup-protection"`}))
	g.Expect(OwnerReferenceField(setUID)).To(gomega.Equal([]string{"f:metadata", "f:ownerReferences", `k:{"uid":"3f1c2a54-7b8e-4d0a-9a51-0c6a2f3e9b11"}`}))
}

// The same paths against kube-apiserver's field manager: a create owns what
// it sent; an update that leaves the finalizer as it was owns none of it.
func TestManagersThatSetAgainstTheFieldManager(t *testing.T) {
	t.Parallel()
	g := gomega.NewWithT(t)
	ctx := context.Background()
	api := apitest.Start(t)
	ns := api.Namespace(t)
	pgs := api.Client.SchedulingV1beta1().PodGroups(ns)
	pg := podGroup(ns, "pg", "w", []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "s", UID: setUID}})
	pg.Finalizers = []string{protection}
	_, err := pgs.Create(ctx, pg, metav1.CreateOptions{FieldManager: "creator"})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	pg, err = pgs.Get(ctx, "pg", metav1.GetOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	pg.Labels = map[string]string{"touched": "yes"}
	_, err = pgs.Update(ctx, pg, metav1.UpdateOptions{FieldManager: "updater"})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	pg, err = pgs.Get(ctx, "pg", metav1.GetOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())

	creator := []FieldSetter{{Manager: "creator", Operation: metav1.ManagedFieldsOperationUpdate}}
	g.Expect(ManagersThatSet(pg, FinalizerField(protection)...)).To(gomega.Equal(creator), DescribeManagedFields(pg))
	g.Expect(ManagersThatSet(pg, OwnerReferenceField(setUID)...)).To(gomega.Equal(creator), DescribeManagedFields(pg))
	g.Expect(ManagersThatSet(pg, "f:metadata", "f:labels", "f:touched")).To(gomega.Equal(
		[]FieldSetter{{Manager: "updater", Operation: metav1.ManagedFieldsOperationUpdate}}), DescribeManagedFields(pg))
}

// A PodGroup whose creator sent the finalizer: the creator's entry owns it
// next to the ownerReference it sent; the scheduler's status entry owns
// neither.
func TestManagersThatSetFindsTheCreatorOfAField(t *testing.T) {
	g := gomega.NewWithT(t)
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{
		Finalizers: []string{protection},
		ManagedFields: []metav1.ManagedFieldsEntry{
			entry("sts-controller", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":{"f:annotations":{".":{},"f:scheduling.k8s.io/managed-by":{}},`+
				`"f:finalizers":{".":{},"v:\"scheduling.k8s.io/podgroup-protection\"":{}},`+
				`"f:ownerReferences":{".":{},"k:{\"uid\":\"`+setUID+`\"}":{}}},"f:spec":{"f:schedulingPolicy":{"f:gang":{"f:minCount":{}}}}}`),
			entry("kube-scheduler", metav1.ManagedFieldsOperationUpdate, "status", `{"f:status":{"f:conditions":{}}}`),
		},
	}}
	creator := []FieldSetter{{Manager: "sts-controller", Operation: metav1.ManagedFieldsOperationUpdate}}
	g.Expect(ManagersThatSet(pg, FinalizerField(protection)...)).To(gomega.Equal(creator))
	g.Expect(ManagersThatSet(pg, OwnerReferenceField(setUID)...)).To(gomega.Equal(creator))
	g.Expect(ManagersThatSet(pg, "f:status")).To(gomega.Equal([]FieldSetter{{Manager: "kube-scheduler", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"}}))
	g.Expect(ManagersThatSet(pg, OwnerReferenceField("another-uid")...)).To(gomega.BeEmpty(), "no entry owns a reference nobody sent")
}

// A PodGroup as the apiserver stores it when the creating client did not send
// the finalizer (PodGroupProtection added it after the managedFields were
// computed), and then with a later server-side apply that claims it; with
// entries no server writes (no fields, malformed), so built by hand.
func TestManagersThatSetOwnsNothingAdmissionAdded(t *testing.T) {
	g := gomega.NewWithT(t)
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{
		Finalizers: []string{protection},
		ManagedFields: []metav1.ManagedFieldsEntry{
			entry("replicaset-controller", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":{"f:ownerReferences":{}},"f:spec":{"f:schedulingPolicy":{}}}`),
			entry("no-fields", metav1.ManagedFieldsOperationUpdate, "", ""),
			entry("malformed", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":`),
		},
	}}
	g.Expect(ManagersThatSet(pg, FinalizerField(protection)...)).To(gomega.BeEmpty(), "the finalizer is owned by no manager: admission added it")

	pg.ManagedFields = append(pg.ManagedFields, entry("other", metav1.ManagedFieldsOperationApply, "",
		`{"f:metadata":{"f:finalizers":{".":{},"v:\"scheduling.k8s.io/podgroup-protection\"":{}}}}`))
	setters := ManagersThatSet(pg, FinalizerField(protection)...)
	g.Expect(setters).To(gomega.Equal([]FieldSetter{{Manager: "other", Operation: metav1.ManagedFieldsOperationApply}}))
	g.Expect(setters[0].String()).To(gomega.Equal("other (Apply)"))
	g.Expect(DescribeManagedFields(pg)).To(gomega.ContainSubstring("no-fields (Update): (no fields)\n"))
	g.Expect(DescribeManagedFields(pg)).To(gomega.ContainSubstring(`other (Apply): {"f:metadata":{"f:finalizers"`))
}

// The same on kube-apiserver: its PodGroupProtection admission adds the
// finalizer to a PodGroup created without it, and no manager owns it, until
// a server-side apply claims it.
func TestManagersThatSetOwnsNothingAdmissionAddedOnTheServer(t *testing.T) {
	t.Parallel()
	g := gomega.NewWithT(t)
	ctx := context.Background()
	api := apitest.Start(t)
	ns := api.Namespace(t)
	pgs := api.Client.SchedulingV1beta1().PodGroups(ns)
	pg, err := pgs.Create(ctx, podGroup(ns, "pg", "w", nil), metav1.CreateOptions{FieldManager: "replicaset-controller"})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(pg.Finalizers).To(gomega.ContainElement(protection), "admission did not add the finalizer")
	g.Expect(ManagersThatSet(pg, FinalizerField(protection)...)).To(gomega.BeEmpty(), DescribeManagedFields(pg))

	pg, err = pgs.Apply(ctx, schedulingv1beta1ac.PodGroup("pg", ns).WithFinalizers(protection), metav1.ApplyOptions{FieldManager: "other", Force: true})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ManagersThatSet(pg, FinalizerField(protection)...)).To(gomega.Equal(
		[]FieldSetter{{Manager: "other", Operation: metav1.ManagedFieldsOperationApply}}), DescribeManagedFields(pg))
}
