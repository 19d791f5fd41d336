package statefulset

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
	"sigs.k8s.io/yaml"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
)

var _ = ginkgo.Describe("StatefulSets composed by a parent controller", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("sts-parent")

		// Not S-I9: that id needs the CompositePodGroup link, proved below.
		ginkgo.It("instantiates the PodGroup from the parent's Workload template, follows only that template's minCount, and never writes the parent's Workload",
			framework.ID("S-U19", "S-U16"), func(ctx context.Context) {
				parent := createParent(ctx, f, "parent")
				pw := createWorkload(ctx, f, builder.Workload("parent-workload", f.Namespace).
					ControllerRef("", "ConfigMap", parent.Name).OwnerReference(controllerRefTo(parent)).
					PodGroupTemplate(builder.PodGroupTemplate("members").Gang(2)).Obj())
				dumpOnFailure(f, "parent Workload", func(ctx context.Context) (any, error) {
					return f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).Get(ctx, pw.Name, metav1.GetOptions{})
				})

				// 3 replicas and a template of minCount 2: the PodGroup's minCount
				// tells the template apart from spec.replicas.
				set := parallel(f, "member", 3, "100m").
					Annotation(groupTemplateNameAnnotation, "members").
					OwnerReference(controllerRefTo(parent)).Obj()
				set = create(ctx, set, gang())
				a := apps.StatefulSet(set)
				apps.WaitForRunning(ctx, f, a, 3)

				pg := delegatedPodGroup(ctx, f, set, pw.Name)
				gomega.Expect(pg.Spec.WorkloadRef).To(gomega.HaveValue(gomega.Equal(schedulingv1beta1.WorkloadReference{
					WorkloadName: pw.Name, TemplateName: "members"})), "the PodGroup must be stamped from the parent's template")
				gomega.Expect(framework.PodGroupMinCount(&pg)).To(gomega.Equal(int32(2)), "minCount comes from the parent's template (2), not spec.replicas (3)")
				apps.ExpectOwner(pg.OwnerReferences, apps.OwnerStatefulSet(set), true)
				apps.ExpectNoOwnerOfKind(pg.OwnerReferences, "Workload")
				apps.ExpectPodsInGroup(ctx, f, a, apps.OwnerStatefulSet(set), &pg, 3)
				expectNoOwnWorkload(ctx, f, set)
				expectWorkloadUntouched(ctx, f, pw)

				ginkgo.By("scaling to 4: the parent's Workload is not written and the PodGroup keeps the template's minCount")
				apps.Scale(ctx, f, a, 4)
				apps.WaitForRunning(ctx, f, a, 4)
				expectDelegatedMinCount(ctx, f, set, pw.Name, 2)
				expectWorkloadUntouched(ctx, f, pw)

				ginkgo.By("the parent raises its template to 3, then scales the StatefulSet to 5: the PodGroup follows the template (3), not replicas (5)")
				pw = setTemplateMinCount(ctx, f, pw.Name, 3)
				apps.Scale(ctx, f, a, 5)
				apps.WaitForRunning(ctx, f, a, 5)
				expectDelegatedMinCount(ctx, f, set, pw.Name, 3)
				expectWorkloadUntouched(ctx, f, pw)
				expectNoOwnWorkload(ctx, f, set)
			})

		ginkgo.It("attaches the delegated PodGroup, at the parent template's minCount, to the parent's CompositePodGroup, with no Workload of its own",
			framework.ID("S-I9", "S-U20"), framework.WithFeatureGate(framework.CompositePodGroup), func(ctx context.Context) {
				requireCompositePodGroups(f)
				parent := createParent(ctx, f, "leader-worker")
				// The parent's tree: one CompositePodGroupTemplate "group" whose
				// child PodGroupTemplate "workers" the StatefulSet is delegated.
				pw := createWorkload(ctx, f, &schedulingv1beta1.Workload{
					ObjectMeta: metav1.ObjectMeta{Name: "parent-workload", Namespace: f.Namespace, OwnerReferences: []metav1.OwnerReference{controllerRefTo(parent)}},
					Spec: schedulingv1beta1.WorkloadSpec{
						ControllerRef: &schedulingv1beta1.TypedLocalObjectReference{Kind: "ConfigMap", Name: parent.Name},
						CompositePodGroupTemplates: []schedulingv1beta1.CompositePodGroupTemplate{{
							Name:             "group",
							SchedulingPolicy: schedulingv1beta1.CompositePodGroupSchedulingPolicy{Basic: &schedulingv1beta1.CompositeBasicSchedulingPolicy{}},
							PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{
								builder.PodGroupTemplate("workers").Gang(2).Obj(),
							},
						}},
					},
				})
				cpg, err := f.ClientSet.SchedulingV1alpha3().CompositePodGroups(f.Namespace).Create(ctx, &schedulingv1alpha3.CompositePodGroup{
					ObjectMeta: metav1.ObjectMeta{Name: "group-0", Namespace: f.Namespace, OwnerReferences: []metav1.OwnerReference{controllerRefTo(parent)}},
					Spec: schedulingv1alpha3.CompositePodGroupSpec{
						WorkloadRef:      &schedulingv1alpha3.WorkloadReference{WorkloadName: pw.Name, TemplateName: "group"},
						SchedulingPolicy: schedulingv1alpha3.CompositePodGroupSchedulingPolicy{Basic: &schedulingv1alpha3.CompositeBasicSchedulingPolicy{}},
					},
				}, metav1.CreateOptions{})
				gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating the parent's CompositePodGroup")
				dumpOnFailure(f, "parent Workload", func(ctx context.Context) (any, error) {
					return f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).Get(ctx, pw.Name, metav1.GetOptions{})
				})
				dumpOnFailure(f, "CompositePodGroups", func(ctx context.Context) (any, error) {
					return f.ClientSet.SchedulingV1alpha3().CompositePodGroups(f.Namespace).List(ctx, metav1.ListOptions{})
				})

				set := parallel(f, "workers", 3, "100m").
					Annotation(groupTemplateNameAnnotation, "workers").
					Annotation(parentCompositePodGroupAnnotation, cpg.Name).
					OwnerReference(controllerRefTo(parent)).Obj()
				set = create(ctx, set, gang())
				apps.WaitForPodsCreated(ctx, f, apps.StatefulSet(set), 3)

				pg := delegatedPodGroup(ctx, f, set, pw.Name)
				gomega.Expect(pg.Spec.WorkloadRef).To(gomega.HaveValue(gomega.Equal(schedulingv1beta1.WorkloadReference{
					WorkloadName: pw.Name, TemplateName: "workers"})), "the PodGroup must be stamped from the parent's nested template")
				gomega.Expect(pg.Spec.ParentCompositePodGroupName).To(gomega.HaveValue(gomega.Equal(cpg.Name)),
					"the PodGroup must be attached to the CompositePodGroup named by %s", parentCompositePodGroupAnnotation)
				gomega.Expect(framework.PodGroupMinCount(&pg)).To(gomega.Equal(int32(2)), "minCount comes from the parent's nested template (2), not spec.replicas (3)")
				apps.ExpectOwner(pg.OwnerReferences, apps.OwnerStatefulSet(set), true)
				apps.ExpectNoOwnerOfKind(pg.OwnerReferences, "Workload")
				apps.ExpectPodsInGroup(ctx, f, apps.StatefulSet(set), apps.OwnerStatefulSet(set), &pg, 3)
				expectNoOwnWorkload(ctx, f, set)
				expectWorkloadUntouched(ctx, f, pw)
				apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 3)
			})

		ginkgo.It("gives a StatefulSet whose owner sets no downward annotation its own Workload and PodGroup", framework.ID("S-I10", "S-U21"), func(ctx context.Context) {
			parent := createParent(ctx, f, "owner")
			set := parallel(f, "owned", 3, "100m").OwnerReference(controllerRefTo(parent)).Obj()
			set = create(ctx, set, gang())
			apps.WaitForRunning(ctx, f, apps.StatefulSet(set), 3)

			w := apps.TheWorkload(ctx, f, apps.StatefulSet(set))
			gomega.Expect(w.Spec.ControllerRef).To(gomega.HaveValue(gomega.Equal(apps.StatefulSet(set).ControllerRef())))
			apps.ExpectOwner(w.OwnerReferences, apps.OwnerStatefulSet(set), true)
			gomega.Expect(w.Annotations).To(gomega.HaveKeyWithValue(managedByAnnotation, managedByStatefulSetController))
			gomega.Expect(framework.WorkloadMinCount(&w)).To(gomega.Equal(int32(3)))
			gomega.Expect(apps.WorkloadsReferencing(ctx, f, schedulingv1beta1.TypedLocalObjectReference{Kind: "ConfigMap", Name: parent.Name})).To(gomega.BeEmpty(),
				"no Workload may name the owner: it did not ask for delegation")
			pg := apps.ThePodGroup(ctx, f, &w)
			gomega.Expect(pg.Spec.WorkloadRef).To(gomega.HaveValue(gomega.Equal(schedulingv1beta1.WorkloadReference{
				WorkloadName: w.Name, TemplateName: w.Spec.PodGroupTemplates[0].Name})))
			gomega.Expect(pg.Spec.ParentCompositePodGroupName).To(gomega.BeNil())
			apps.ExpectOwner(pg.OwnerReferences, apps.OwnerStatefulSet(set), true)
			apps.ExpectOwner(pg.OwnerReferences, apps.OwnerWorkload(&w), false)
			apps.ExpectPodsInGroup(ctx, f, apps.StatefulSet(set), apps.OwnerStatefulSet(set), &pg, 3)
		})

		ginkgo.It("does not delegate on the group-template-name annotation without a parent controller: own Workload and PodGroup, and an event",
			framework.ID("S-U22"), func(ctx context.Context) {
				set := parallel(f, "orphan", 2, "100m").Annotation(groupTemplateNameAnnotation, "members").Obj()
				set = create(ctx, set, gang())
				a := apps.StatefulSet(set)
				apps.WaitForGang(ctx, f, a, 2, 2)
				w := apps.TheWorkload(ctx, f, a)
				apps.ExpectOwner(w.OwnerReferences, apps.OwnerStatefulSet(set), true)
				pg := apps.ThePodGroup(ctx, f, &w)
				apps.ExpectPodsInGroup(ctx, f, a, apps.OwnerStatefulSet(set), &pg, 2)
				// KEP-6277 (test plan): "group-template-name without a parent
				// controller ownerReference does not suppress StatefulSet-managed
				// Workload and PodGroup creation and surfaces an event." It names
				// no reason: the event must name the annotation.
				event := apps.WaitForWarning(ctx, f, a, apps.Warning{
					Why:   "the annotation " + groupTemplateNameAnnotation + " without a parent controller ownerReference",
					Names: []string{groupTemplateNameAnnotation, "group-template-name"}}, nil)
				logf("event %s: %s", event.Reason, event.Message)
			})

		ginkgo.DescribeTable("falls back with an event, and creates no Workload of its own, when the parent's Workload or template cannot be resolved",
			framework.ID("S-U23"), func(ctx context.Context, parentWorkloads func(parent *corev1.ConfigMap) []*schedulingv1beta1.Workload) {
				// Names that no message says by chance: the event must name one.
				parent := createParent(ctx, f, "composer")
				var existing []*schedulingv1beta1.Workload
				for _, w := range parentWorkloads(parent) {
					existing = append(existing, createWorkload(ctx, f, w))
				}
				set := parallel(f, "member", 2, "100m").
					Annotation(groupTemplateNameAnnotation, "members").
					OwnerReference(controllerRefTo(parent)).Obj()
				set = create(ctx, set, gang())
				a := apps.StatefulSet(set)
				// KEP-6277: "If the parent Workload or template cannot be
				// resolved unambiguously, fall back and surface an event rather
				// than creating a separate Workload." It names no reason: the
				// event must name the parent, one of its Workloads or the
				// template it asks for.
				names := []string{parent.Name, "members"}
				for _, w := range existing {
					names = append(names, w.Name)
				}
				event := apps.WaitForWarning(ctx, f, a, apps.Warning{Why: "its parent's Workload or template cannot be resolved", Names: names}, nil)
				logf("event %s: %s", event.Reason, event.Message)
				expectNothingCreated(ctx, f, existing...)
				for _, w := range existing {
					expectWorkloadUntouched(ctx, f, w)
				}
			},
			ginkgo.Entry("no Workload of the parent", func(*corev1.ConfigMap) []*schedulingv1beta1.Workload { return nil }),
			ginkgo.Entry("two Workloads of the parent", func(parent *corev1.ConfigMap) []*schedulingv1beta1.Workload {
				return []*schedulingv1beta1.Workload{parentWorkload(parent, "composer-one", "members"), parentWorkload(parent, "composer-two", "members")}
			}),
			ginkgo.Entry("the parent's Workload has no template of that name", func(parent *corev1.ConfigMap) []*schedulingv1beta1.Workload {
				return []*schedulingv1beta1.Workload{parentWorkload(parent, "composer-workload", "others")}
			}),
		)
	})

// parentWorkload is a Workload of the parent ConfigMap with one gang template.
func parentWorkload(parent *corev1.ConfigMap, name, template string) *schedulingv1beta1.Workload {
	return builder.Workload(name, parent.Namespace).ControllerRef("", "ConfigMap", parent.Name).OwnerReference(controllerRefTo(parent)).
		PodGroupTemplate(builder.PodGroupTemplate(template).Gang(2)).Obj()
}

// expectDelegatedMinCount asserts set's delegated PodGroup (stamped from the
// parent Workload's template) carries minCount want. Called once the pods of
// a scale are running: the PodGroup is synced before pods are created.
func expectDelegatedMinCount(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet, parentWorkload string, want int32) {
	ginkgo.GinkgoHelper()
	pg := delegatedPodGroup(ctx, f, set, parentWorkload)
	gomega.Expect(framework.PodGroupMinCount(&pg)).To(gomega.Equal(want), "the delegated PodGroup's minCount must be the parent template's %d", want)
}

// createParent creates a ConfigMap to stand for a parent controller's object
// (an LWS, a JobSet): something a StatefulSet and a Workload can be owned by.
func createParent(ctx context.Context, f *framework.Framework, name string) *corev1.ConfigMap {
	cm, err := f.ClientSet.CoreV1().ConfigMaps(f.Namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.Namespace},
	}, metav1.CreateOptions{})
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "creating the parent ConfigMap %s", name)
	return cm
}

// controllerRefTo is a controller ownerReference to the parent.
func controllerRefTo(cm *corev1.ConfigMap) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID, Controller: ptr.To(true)}
}

// delegatedPodGroup waits until exactly one PodGroup references the parent
// Workload and is controlled by set, and returns it.
func delegatedPodGroup(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet, parentWorkload string) schedulingv1beta1.PodGroup {
	var got []schedulingv1beta1.PodGroup
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) []string {
		got = nil
		for _, pg := range apps.PodGroupsReferencing(ctx, f, parentWorkload) {
			if metav1.IsControlledBy(&pg, set) {
				got = append(got, pg)
			}
		}
		return apps.Names(got)
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.HaveLen(1),
		"waiting for exactly one PodGroup controlled by StatefulSet %s whose spec.workloadRef names the parent Workload %s", set.Name, parentWorkload)
	return got[0]
}

// expectNoOwnWorkload asserts, for a while, that no Workload names set in
// spec.controllerRef.
func expectNoOwnWorkload(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet) {
	gomega.ConsistentlyWithOffset(1, ctx, func(ctx context.Context) []string {
		return apps.Names(apps.Workloads(ctx, f, apps.StatefulSet(set)))
	}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.BeEmpty(),
		"a delegated StatefulSet must not have a Workload of its own")
}

// requireCompositePodGroups skips, saying why, when the server does not serve
// scheduling.k8s.io/v1alpha3 compositepodgroups.
func requireCompositePodGroups(f *framework.Framework) {
	const gv = "scheduling.k8s.io/v1alpha3"
	list, err := f.ClientSet.Discovery().ServerResourcesForGroupVersion(gv)
	if err != nil {
		ginkgo.Skip(fmt.Sprintf("%s is not served (%v): CompositePodGroups need the CompositePodGroup feature gate and --runtime-config=%s=true", gv, err, gv))
	}
	for _, r := range list.APIResources {
		if r.Name == "compositepodgroups" {
			return
		}
	}
	ginkgo.Skip(fmt.Sprintf("%s is served without compositepodgroups: CompositePodGroups need the CompositePodGroup feature gate", gv))
}

// dumpOnFailure writes what get returns into the spec's log if the spec
// fails: objects the namespace dump does not cover.
func dumpOnFailure(f *framework.Framework, what string, get func(context.Context) (any, error)) {
	ginkgo.DeferCleanup(func(ctx context.Context) {
		if !ginkgo.CurrentSpecReport().Failed() {
			return
		}
		obj, err := get(ctx)
		if err != nil {
			ginkgo.GinkgoWriter.Printf("%s in %s: %v\n", what, f.Namespace, err)
			return
		}
		data, _ := yaml.Marshal(obj)
		ginkgo.GinkgoWriter.Printf("%s in %s:\n%s\n", what, f.Namespace, data)
	})
}
