package upgrade

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// The upgrade specs drive Deployments and StatefulSets through gate changes,
// so they look at both kinds the same way: one app (a Deployment or a
// StatefulSet named after its app label) and the scheduling objects and pods
// that belong to it. Discovery follows the references the KEPs define: the
// Workload is controlled by the app, each PodGroup names that Workload in
// spec.workloadRef.

// app names a Deployment or StatefulSet of the spec's namespace.
type app struct {
	Kind, Name string
}

func deploymentApp(d *appsv1.Deployment) app   { return app{Kind: "Deployment", Name: d.Name} }
func statefulSetApp(s *appsv1.StatefulSet) app { return app{Kind: "StatefulSet", Name: s.Name} }

func (a app) String() string { return a.Kind + "/" + a.Name }

// object is a scheduling object's identity and gang minCount (0: basic).
type object struct {
	Name     string
	UID      types.UID
	MinCount int32
}

// member is a pod, its identity and node, and the PodGroup it names (empty:
// none, the pod schedules on its own).
type member struct {
	Name  string
	UID   types.UID
	Node  string
	Phase corev1.PodPhase
	Group string
}

// appState is everything the specs assert on, as one value that prints whole
// when a wait fails.
type appState struct {
	Workloads   []object
	ReplicaSets []string // a Deployment's; empty for a StatefulSet
	PodGroups   []object // live ones only
	Pods        []member // not terminating
}

func (s appState) String() string {
	var pods []string
	for _, p := range s.Pods {
		pods = append(pods, fmt.Sprintf("%s(%s)@%s group=%q", p.Name, p.Phase, p.Node, p.Group))
	}
	return fmt.Sprintf("workloads %v, replicasets %v, podgroups %v, pods [%s]", s.Workloads, s.ReplicaSets, s.PodGroups, strings.Join(pods, " "))
}

// podUIDs maps pod name to UID.
func (s appState) podUIDs() map[string]types.UID {
	out := map[string]types.UID{}
	for _, p := range s.Pods {
		out[p.Name] = p.UID
	}
	return out
}

// grouped and ungrouped count the pods that name a PodGroup and those that do not.
func (s appState) grouped() int {
	n := 0
	for _, p := range s.Pods {
		if p.Group != "" {
			n++
		}
	}
	return n
}

func (s appState) ungrouped() []member {
	var out []member
	for _, p := range s.Pods {
		if p.Group == "" {
			out = append(out, p)
		}
	}
	return out
}

func (s appState) bound() int {
	n := 0
	for _, p := range s.Pods {
		if p.Node != "" {
			n++
		}
	}
	return n
}

// uids is the set of pod UIDs, to prove running pods were left alone.
func (s appState) uids() []types.UID {
	out := make([]types.UID, 0, len(s.Pods))
	for _, p := range s.Pods {
		out = append(out, p.UID)
	}
	slices.Sort(out)
	return out
}

// readState reads a's Workloads, their live PodGroups and a's live pods.
func readState(ctx context.Context, f *framework.Framework, a app) appState {
	s := appState{Workloads: []object{}, ReplicaSets: []string{}, PodGroups: []object{}, Pods: []member{}}
	cs := f.ClientSet
	ws, err := cs.SchedulingV1beta1().Workloads(f.Namespace).List(ctx, metav1.ListOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing Workloads")
	mine := map[string]bool{}
	for i := range ws.Items {
		w := &ws.Items[i]
		// By controller ownerReference, or by spec.controllerRef (the KEPs'
		// discovery reference) for a Workload someone else created.
		owner, ref := metav1.GetControllerOf(w), w.Spec.ControllerRef
		if (owner != nil && owner.Kind == a.Kind && owner.Name == a.Name) ||
			(ref != nil && ref.APIGroup == appsv1.GroupName && ref.Kind == a.Kind && ref.Name == a.Name) {
			mine[w.Name] = true
			s.Workloads = append(s.Workloads, object{Name: w.Name, UID: w.UID, MinCount: framework.WorkloadMinCount(w)})
		}
	}
	if a.Kind == "Deployment" {
		rss, err := cs.AppsV1().ReplicaSets(f.Namespace).List(ctx, metav1.ListOptions{})
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing ReplicaSets")
		for i := range rss.Items {
			if ref := metav1.GetControllerOf(&rss.Items[i]); ref != nil && ref.Kind == a.Kind && ref.Name == a.Name {
				s.ReplicaSets = append(s.ReplicaSets, rss.Items[i].Name)
			}
		}
	}
	pgs, err := cs.SchedulingV1beta1().PodGroups(f.Namespace).List(ctx, metav1.ListOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing PodGroups")
	for i := range pgs.Items {
		pg := &pgs.Items[i]
		if pg.DeletionTimestamp == nil && pg.Spec.WorkloadRef != nil && mine[pg.Spec.WorkloadRef.WorkloadName] {
			s.PodGroups = append(s.PodGroups, object{Name: pg.Name, UID: pg.UID, MinCount: framework.PodGroupMinCount(pg)})
		}
	}
	pods, err := framework.ListPods(ctx, podsOf(f, a))
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing pods of %s", a)
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		m := member{Name: p.Name, UID: p.UID, Node: p.Spec.NodeName, Phase: p.Status.Phase}
		if p.Spec.SchedulingGroup != nil {
			m.Group = ptr.Deref(p.Spec.SchedulingGroup.PodGroupName, "")
		}
		s.Pods = append(s.Pods, m)
	}
	return s
}

func podsOf(f *framework.Framework, a app) framework.PodsInput {
	return framework.PodsInput{ClientSet: f.ClientSet, Namespace: f.Namespace, LabelSelector: builder.AppLabel + "=" + a.Name}
}

// waitForState polls readState until it matches, and returns the match.
func waitForState(ctx context.Context, f *framework.Framework, a app, what string, matcher gomega.OmegaMatcher) appState {
	var last appState
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) appState {
		last = readState(ctx, f, a)
		return last
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(matcher, "waiting for %s: %s", a, what)
	return last
}

// keepsState asserts the state of a keeps matching for the stays-unbound
// period (used for "nothing happens" after a gate change).
func keepsState(ctx context.Context, f *framework.Framework, a app, what string, matcher gomega.OmegaMatcher) {
	gomega.ConsistentlyWithOffset(1, ctx, func(ctx context.Context) appState {
		return readState(ctx, f, a)
	}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(matcher, "%s must keep: %s", a, what)
}

// Matchers over appState.

// grouped: one Workload and one PodGroup, both at minCount, and n Running
// pods that all name that PodGroup.
func grouped(minCount int32, n int) gomega.OmegaMatcher {
	return gomega.SatisfyAll(
		gomega.HaveField("Workloads", gomega.ConsistOf(gomega.HaveField("MinCount", minCount))),
		gomega.HaveField("PodGroups", gomega.ConsistOf(gomega.HaveField("MinCount", minCount))),
		gomega.WithTransform(func(s appState) int { return s.grouped() }, gomega.Equal(n)),
		gomega.WithTransform(func(s appState) int { return s.bound() }, gomega.Equal(n)),
		gomega.HaveField("Pods", gomega.HaveLen(n)),
	)
}

// ungroupedOnly: no scheduling objects, n bound pods naming no PodGroup.
func ungroupedOnly(n int) gomega.OmegaMatcher {
	return gomega.SatisfyAll(
		gomega.HaveField("Workloads", gomega.BeEmpty()),
		gomega.HaveField("PodGroups", gomega.BeEmpty()),
		gomega.WithTransform(func(s appState) int { return len(s.ungrouped()) }, gomega.Equal(n)),
		gomega.WithTransform(func(s appState) int { return s.bound() }, gomega.Equal(n)),
		gomega.HaveField("Pods", gomega.HaveLen(n)),
	)
}

// sameObjects asserts the Workloads and PodGroups of now are those of before
// (same UIDs: discovered and reused, never recreated).
func sameObjects(now, before appState) {
	uids := func(objs []object) []types.UID {
		out := []types.UID{}
		for _, o := range objs {
			out = append(out, o.UID)
		}
		slices.Sort(out)
		return out
	}
	gomega.ExpectWithOffset(1, uids(now.Workloads)).To(gomega.Equal(uids(before.Workloads)), "the Workload was not reused: before %s, now %s", before, now)
	gomega.ExpectWithOffset(1, uids(now.PodGroups)).To(gomega.Equal(uids(before.PodGroups)), "the PodGroup was not reused: before %s, now %s", before, now)
}

// podsUndisturbed asserts every pod of before still runs, same UID, same node.
func podsUndisturbed(now, before appState) {
	nodes := map[types.UID]string{}
	for _, p := range now.Pods {
		nodes[p.UID] = p.Node
	}
	for _, p := range before.Pods {
		node, ok := nodes[p.UID]
		gomega.ExpectWithOffset(1, ok).To(gomega.BeTrue(), "pod %s (uid %s) was replaced or deleted; now %s", p.Name, p.UID, now)
		gomega.ExpectWithOffset(1, node).To(gomega.Equal(p.Node), "pod %s moved from %s", p.Name, p.Node)
	}
}

// Intent.

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

func scaleDeployment(ctx context.Context, f *framework.Framework, name string, replicas int32) {
	_, err := framework.Intent.UpdateDeployment(ctx, f.Namespace, name, func(d *appsv1.Deployment, _ **framework.DeploymentScheduling) {
		d.Spec.Replicas = ptr.To(replicas)
	})
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "scaling Deployment %s to %d", name, replicas)
}

func scaleStatefulSet(ctx context.Context, f *framework.Framework, name string, replicas int32) {
	_, err := framework.Intent.UpdateStatefulSet(ctx, f.Namespace, name, func(s *appsv1.StatefulSet, _ **framework.StatefulSetScheduling) {
		s.Spec.Replicas = ptr.To(replicas)
	})
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), "scaling StatefulSet %s to %d", name, replicas)
}

// expectCreations asserts how many Workloads and PodGroups were created in
// the namespace since h started: the KEPs' "no duplicates". Every creation is
// seen by a watch, so a duplicate that existed only for a moment counts too.
func expectCreations(h *framework.WriteHistory, workloads, podGroups int) {
	gomega.ExpectWithOffset(1, h.Creations("workloads")).To(gomega.HaveLen(workloads), "Workload creations: %s", h)
	gomega.ExpectWithOffset(1, h.Creations("podgroups")).To(gomega.HaveLen(podGroups), "PodGroup creations: %s", h)
}
