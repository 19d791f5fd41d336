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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// Well-known keys of KEP-6277 (managed-by) and KEP-6089 (the downward-mapping
// annotations a parent controller sets on a StatefulSet it composes).
const (
	managedByAnnotation               = "scheduling.k8s.io/managed-by"
	managedByStatefulSetController    = "statefulset-controller"
	groupTemplateNameAnnotation       = "scheduling.k8s.io/group-template-name"
	parentCompositePodGroupAnnotation = "scheduling.k8s.io/parent-compositepodgroup"
	podGroupProtectionFinalizer       = "scheduling.k8s.io/podgroup-protection"
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

// podsOf selects the StatefulSet's pods.
func podsOf(f *framework.Framework, set *appsv1.StatefulSet) framework.PodsInput {
	return framework.PodsInput{ClientSet: f.ClientSet, Namespace: f.Namespace, LabelSelector: builder.AppLabel + "=" + set.Name}
}

// podName is the name of the pod of set with the given ordinal.
func podName(set *appsv1.StatefulSet, ordinal int) string {
	return fmt.Sprintf("%s-%d", set.Name, ordinal)
}

// setRef is the spec.controllerRef by which a StatefulSet's Workload is found.
func setRef(set *appsv1.StatefulSet) schedulingv1beta1.TypedLocalObjectReference {
	return schedulingv1beta1.TypedLocalObjectReference{APIGroup: appsv1.GroupName, Kind: "StatefulSet", Name: set.Name}
}

// workloadsReferencing returns the namespace's Workloads whose spec.controllerRef is ref.
func workloadsReferencing(ctx context.Context, f *framework.Framework, ref schedulingv1beta1.TypedLocalObjectReference) []schedulingv1beta1.Workload {
	list, err := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).List(ctx, metav1.ListOptions{})
	gomega.ExpectWithOffset(2, err).NotTo(gomega.HaveOccurred(), "listing Workloads")
	var out []schedulingv1beta1.Workload
	for _, w := range list.Items {
		if c := w.Spec.ControllerRef; c != nil && *c == ref {
			out = append(out, w)
		}
	}
	return out
}

// workloadsOf returns the Workloads of set, discovered by reference
// (spec.controllerRef {apps, StatefulSet, name}), never by name.
func workloadsOf(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet) []schedulingv1beta1.Workload {
	return workloadsReferencing(ctx, f, setRef(set))
}

// theWorkload waits until exactly one Workload references set and returns it.
func theWorkload(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet) schedulingv1beta1.Workload {
	var got []schedulingv1beta1.Workload
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) []string {
		got = workloadsOf(ctx, f, set)
		return objectNames(got)
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.HaveLen(1),
		"waiting for exactly one Workload whose spec.controllerRef is StatefulSet %s", set.Name)
	return got[0]
}

// podGroupsOf returns the PodGroups whose spec.workloadRef.workloadName is
// workloadName (discovery by reference), terminating ones included.
func podGroupsOf(ctx context.Context, f *framework.Framework, workloadName string) []schedulingv1beta1.PodGroup {
	list, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).List(ctx, metav1.ListOptions{})
	gomega.ExpectWithOffset(2, err).NotTo(gomega.HaveOccurred(), "listing PodGroups")
	var out []schedulingv1beta1.PodGroup
	for _, pg := range list.Items {
		if r := pg.Spec.WorkloadRef; r != nil && r.WorkloadName == workloadName {
			out = append(out, pg)
		}
	}
	return out
}

// thePodGroup waits until exactly one PodGroup references w and returns it.
func thePodGroup(ctx context.Context, f *framework.Framework, w *schedulingv1beta1.Workload) schedulingv1beta1.PodGroup {
	var got []schedulingv1beta1.PodGroup
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) []string {
		got = podGroupsOf(ctx, f, w.Name)
		return objectNames(got)
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.HaveLen(1),
		"waiting for exactly one PodGroup whose spec.workloadRef names Workload %s", w.Name)
	return got[0]
}

func objectNames[T any, P interface {
	*T
	metav1.Object
}](items []T) []string {
	out := make([]string, 0, len(items))
	for i := range items {
		out = append(out, P(&items[i]).GetName())
	}
	return out
}

// gangState is a gang StatefulSet's scheduling objects, as one value, so a
// wait can match all of it at once and print all of it when it does not.
type gangState struct {
	Workloads, PodGroups               int
	WorkloadUID, PodGroupUID           types.UID
	WorkloadMinCount, PodGroupMinCount int32
	PodGroupTerminating                bool
}

func (s gangState) String() string {
	return fmt.Sprintf("%d Workload(s) (uid %s, template minCount %d), %d PodGroup(s) (uid %s, minCount %d, terminating %t)",
		s.Workloads, s.WorkloadUID, s.WorkloadMinCount, s.PodGroups, s.PodGroupUID, s.PodGroupMinCount, s.PodGroupTerminating)
}

// readGangState discovers set's Workload and PodGroup by reference.
func readGangState(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet) gangState {
	var s gangState
	ws := workloadsOf(ctx, f, set)
	s.Workloads = len(ws)
	if len(ws) != 1 {
		return s
	}
	s.WorkloadUID, s.WorkloadMinCount = ws[0].UID, framework.WorkloadMinCount(&ws[0])
	pgs := podGroupsOf(ctx, f, ws[0].Name)
	s.PodGroups = len(pgs)
	if len(pgs) == 1 {
		s.PodGroupUID, s.PodGroupMinCount = pgs[0].UID, framework.PodGroupMinCount(&pgs[0])
		s.PodGroupTerminating = pgs[0].DeletionTimestamp != nil
	}
	return s
}

// waitForMinCounts waits until set has one Workload whose template and one
// live PodGroup whose spec both carry gang minCount want, and returns the state.
func waitForMinCounts(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet, want int32) gangState {
	var last gangState
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) gangState {
		last = readGangState(ctx, f, set)
		return last
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.SatisfyAll(
		gomega.HaveField("Workloads", 1), gomega.HaveField("PodGroups", 1),
		gomega.HaveField("WorkloadMinCount", want), gomega.HaveField("PodGroupMinCount", want),
		gomega.HaveField("PodGroupTerminating", false),
	), "waiting for the Workload template and the PodGroup of StatefulSet %s to carry minCount %d", set.Name, want)
	return last
}

// expectSameObjects asserts the Workload and the PodGroup are the ones seen
// before (updated in place, never recreated).
func expectSameObjects(now, before gangState) {
	gomega.ExpectWithOffset(1, now.WorkloadUID).To(gomega.Equal(before.WorkloadUID), "the Workload was recreated, not updated in place: before %s, now %s", before, now)
	gomega.ExpectWithOffset(1, now.PodGroupUID).To(gomega.Equal(before.PodGroupUID), "the PodGroup was recreated, not updated in place: before %s, now %s", before, now)
}

// scale sets spec.replicas through an ordinary update.
func scale(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet, replicas int32) {
	_, err := framework.Intent.UpdateStatefulSet(ctx, f.Namespace, set.Name, func(s *appsv1.StatefulSet, _ **framework.StatefulSetScheduling) {
		s.Spec.Replicas = ptr.To(replicas)
	})
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "scaling StatefulSet %s to %d", set.Name, replicas)
}

// waitForPodsCreated waits until set has exactly n pods (bound or not).
func waitForPodsCreated(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet, n int) []corev1.Pod {
	var pods []corev1.Pod
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) ([]string, error) {
		var err error
		pods, err = framework.ListPods(ctx, podsOf(f, set))
		return podNames(pods), err
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.HaveLen(n),
		"waiting for the StatefulSet controller to create %d pods of %s", n, set.Name)
	return pods
}

func podNames(pods []corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

// placement is a pod's identity and node, to prove pods were left alone.
type placement struct {
	UID  types.UID
	Node string
}

// placements maps pod name to its UID and node.
func placements(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet) map[string]placement {
	pods, err := framework.ListPods(ctx, podsOf(f, set))
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	out := map[string]placement{}
	for _, p := range pods {
		out[p.Name] = placement{UID: p.UID, Node: p.Spec.NodeName}
	}
	return out
}

// expectUndisturbed asserts every pod of before still exists with the same
// UID on the same node, Running and not terminating.
func expectUndisturbed(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet, before map[string]placement) {
	pods, err := framework.ListPods(ctx, podsOf(f, set))
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	byName := map[string]corev1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}
	for name, was := range before {
		p, ok := byName[name]
		gomega.ExpectWithOffset(1, ok).To(gomega.BeTrue(), "pod %s is gone", name)
		gomega.ExpectWithOffset(1, p.UID).To(gomega.Equal(was.UID), "pod %s was recreated", name)
		gomega.ExpectWithOffset(1, p.Spec.NodeName).To(gomega.Equal(was.Node), "pod %s moved", name)
		gomega.ExpectWithOffset(1, p.DeletionTimestamp).To(gomega.BeNil(), "pod %s is terminating", name)
		gomega.ExpectWithOffset(1, p.Status.Phase).To(gomega.Equal(corev1.PodRunning), "pod %s", name)
	}
}

// expectPodsInGroup asserts every pod of set is controlled by set and joins
// pg: spec.schedulingGroup.podGroupName and a non-controller ownerReference
// to the PodGroup's UID.
func expectPodsInGroup(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet, pg *schedulingv1beta1.PodGroup, want int) {
	pods, err := framework.ListPods(ctx, podsOf(f, set))
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	gomega.ExpectWithOffset(1, pods).To(gomega.HaveLen(want), "pods of %s: %v", set.Name, podNames(pods))
	for _, p := range pods {
		gomega.ExpectWithOffset(1, p.Spec.SchedulingGroup).NotTo(gomega.BeNil(), "pod %s has no spec.schedulingGroup", p.Name)
		gomega.ExpectWithOffset(1, p.Spec.SchedulingGroup.PodGroupName).To(gomega.HaveValue(gomega.Equal(pg.Name)),
			"pod %s must name PodGroup %s", p.Name, pg.Name)
		expectOwnerWithOffset(2, p.OwnerReferences, "apps/v1", "StatefulSet", set.Name, string(set.UID), true)
		expectOwnerWithOffset(2, p.OwnerReferences, "scheduling.k8s.io/v1beta1", "PodGroup", pg.Name, string(pg.UID), false)
	}
}

// expectOwner asserts refs contain exactly one reference to the named object
// with the given controller flag.
func expectOwner(refs []metav1.OwnerReference, apiVersion, kind, name, uid string, controller bool) {
	expectOwnerWithOffset(2, refs, apiVersion, kind, name, uid, controller)
}

func expectOwnerWithOffset(offset int, refs []metav1.OwnerReference, apiVersion, kind, name, uid string, controller bool) {
	var found []metav1.OwnerReference
	for _, r := range refs {
		if r.Kind == kind && r.Name == name {
			found = append(found, r)
		}
	}
	gomega.ExpectWithOffset(offset, found).To(gomega.HaveLen(1), "ownerReferences %v: want one to %s %s", refs, kind, name)
	r := found[0]
	gomega.ExpectWithOffset(offset, r.APIVersion).To(gomega.Equal(apiVersion), "ownerReference to %s %s", kind, name)
	gomega.ExpectWithOffset(offset, string(r.UID)).To(gomega.Equal(uid), "ownerReference to %s %s", kind, name)
	gomega.ExpectWithOffset(offset, ptr.Deref(r.Controller, false)).To(gomega.Equal(controller), "controller flag of the ownerReference to %s %s", kind, name)
}

// expectNoOwnerOfKind asserts refs name no object of kind.
func expectNoOwnerOfKind(refs []metav1.OwnerReference, kind string) {
	for _, r := range refs {
		gomega.ExpectWithOffset(1, r.Kind).NotTo(gomega.Equal(kind), "unexpected ownerReference %v", r)
	}
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

// allPodGroups lists every PodGroup of the namespace.
func allPodGroups(ctx context.Context, f *framework.Framework) []schedulingv1beta1.PodGroup {
	list, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).List(ctx, metav1.ListOptions{})
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "listing PodGroups")
	return list.Items
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
