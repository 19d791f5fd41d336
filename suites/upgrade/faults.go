package upgrade

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// Faults in the middle of work, not between steps: a component of the
// control plane goes away while the implementation is half-way through a
// rollout or a scale, the whole control plane restarts, a worker under a
// running gang stops, the implementation's controller process is killed, or
// every watch it holds expires. Whatever the timing, the implementation must
// converge with no duplicate Workload or PodGroup, even for an instant (the
// duplicate watcher sees every intermediate state), no running pod deleted
// that the operation keeps, and minCounts right. The faults go through
// framework/faults.go: the harness's local cluster makes them itself, an
// existing cluster through --fault-command (hack/hooks/kubeadm/fault.sh on
// kind) and --controller-restart-command's kill; without them these specs
// skip, naming the hook.
var _ = ginkgo.Describe("Control-plane faults in the middle of a rollout or a scale", ginkgo.Label("Fault"),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment, framework.WorkloadWithStatefulSet),
	framework.Serial, framework.Disruptive, func() {
		f := framework.New("faults")

		ginkgo.It("converges on one PodGroup for the new revision when kube-apiserver restarts during a gang Deployment's Recreate rollout", func(ctx context.Context) {
			framework.RequireFaults(ctx, framework.FaultRestart)
			dups := framework.WatchForDuplicates(ctx, f.ClientSet, f.Namespace)
			a := apps.Deployment(createDeployment(ctx, f, "rollout", 3, gangDeployment()))
			before := apps.WaitForGang(ctx, f, a, 3, 3)

			ginkgo.By("rolling out a new revision and restarting kube-apiserver as soon as its ReplicaSet exists")
			rollOutDeployment(ctx, f, a)
			framework.RestartComponent(ctx, localcluster.APIServer)

			expectRolledOut(ctx, f, a, before)
			dups.ExpectNone()
		})

		// A scale in flight when a component goes away: the existing pods stay,
		// the same Workload and PodGroup are updated in place.
		scaleThrough := func(ctx context.Context, a apps.App, from, to int32, component localcluster.Component) {
			dups := framework.WatchForDuplicates(ctx, f.ClientSet, f.Namespace)
			before := apps.WaitForGang(ctx, f, a, from, int(from))

			ginkgo.By(fmt.Sprintf("scaling to %d and restarting %s at once", to, component))
			apps.Scale(ctx, f, a, to)
			framework.RestartComponent(ctx, component)

			after := apps.WaitForGang(ctx, recovering(f), a, to, int(to))
			apps.ExpectSameObjects(after, before)
			apps.ExpectPodsUndisturbed(after, before)
			dups.ExpectNone()
		}

		ginkgo.It("scales a gang StatefulSet from 2 to 6 through a kube-apiserver restart, keeping pods 0 and 1", framework.ID("S-P10"), framework.KEP(6277), func(ctx context.Context) {
			framework.RequireFaults(ctx, framework.FaultRestart)
			scaleThrough(ctx, apps.StatefulSet(createStatefulSet(ctx, f, "grow", 2, true, gangStatefulSet())), 2, 6, localcluster.APIServer)
		})

		ginkgo.It("scales a gang Deployment from 3 to 6 through an etcd restart, keeping the running pods", framework.ID("D-P7"), framework.KEP(6276), func(ctx context.Context) {
			framework.RequireFaults(ctx, framework.FaultRestart)
			scaleThrough(ctx, apps.Deployment(createDeployment(ctx, f, "scale", 3, gangDeployment())), 3, 6, localcluster.Etcd)
		})

		// The control-plane node restarts (its machine, or on kind its
		// container): etcd, kube-apiserver, kube-controller-manager,
		// kube-scheduler and the implementation beside them go down together.
		ginkgo.It("scales a gang Deployment and a gang StatefulSet through a restart of the whole control plane (etcd, kube-apiserver and all beside them at once), keeping the running pods", framework.ID("D-P7", "S-P10"), framework.KEP(6276), framework.KEP(6277), func(ctx context.Context) {
			framework.RequireFaults(ctx, framework.FaultRestart)
			dups := framework.WatchForDuplicates(ctx, f.ClientSet, f.Namespace)
			d := apps.Deployment(createDeployment(ctx, f, "cp-deploy", 2, gangDeployment()))
			s := apps.StatefulSet(createStatefulSet(ctx, f, "cp-set", 2, true, gangStatefulSet()))
			dBefore, sBefore := apps.WaitForGang(ctx, f, d, 2, 2), apps.WaitForGang(ctx, f, s, 2, 2)

			ginkgo.By("scaling both to 4 and restarting the whole control plane at once")
			apps.Scale(ctx, f, d, 4)
			apps.Scale(ctx, f, s, 4)
			framework.RestartComponent(ctx, framework.ControlPlane)

			dAfter, sAfter := apps.WaitForGang(ctx, recovering(f), d, 4, 4), apps.WaitForGang(ctx, recovering(f), s, 4, 4)
			apps.ExpectSameObjects(dAfter, dBefore)
			apps.ExpectSameObjects(sAfter, sBefore)
			apps.ExpectPodsUndisturbed(dAfter, dBefore)
			apps.ExpectPodsUndisturbed(sAfter, sBefore)
			dups.ExpectNone()
		})

		ginkgo.It("relists when every watch expires (etcd compacted past them, kube-apiserver restarted) and converges on the changes", func(ctx context.Context) {
			framework.RequireFaults(ctx, framework.FaultRestart, framework.FaultCompactEtcd)
			dups := framework.WatchForDuplicates(ctx, f.ClientSet, f.Namespace)
			d := apps.Deployment(createDeployment(ctx, f, "deploy", 2, gangDeployment()))
			s := apps.StatefulSet(createStatefulSet(ctx, f, "set", 2, true, gangStatefulSet()))
			dBefore, sBefore := apps.WaitForGang(ctx, f, d, 2, 2), apps.WaitForGang(ctx, f, s, 2, 2)

			ginkgo.By("compacting etcd past every watch's resourceVersion and restarting kube-apiserver")
			// The compaction erases the very history that would prove no
			// duplicate came and went meanwhile (the watcher would rightly
			// report a gap): the first watcher answers for the time before
			// it, a second one from the restart on; in between the apps are
			// settled and nothing is asked of the implementation.
			dups.ExpectNone()
			dups.Stop()
			seen := latestResourceVersion(ctx, f)
			framework.CompactEtcd(ctx)
			framework.RestartComponent(ctx, localcluster.APIServer)
			expectWatchExpired(ctx, f, seen)
			dups = framework.WatchForDuplicates(ctx, f.ClientSet, f.Namespace)

			ginkgo.By("changing both apps: only a relist shows the implementation where they stand")
			apps.Scale(ctx, f, d, 4)
			apps.Scale(ctx, f, s, 3)
			dAfter, sAfter := apps.WaitForGang(ctx, recovering(f), d, 4, 4), apps.WaitForGang(ctx, recovering(f), s, 3, 3)
			apps.ExpectSameObjects(dAfter, dBefore)
			apps.ExpectSameObjects(sAfter, sBefore)
			apps.ExpectPodsUndisturbed(dAfter, dBefore)
			apps.ExpectPodsUndisturbed(sAfter, sBefore)
			dups.ExpectNone()
		})

		// A worker stops under running gangs: its kubelet is gone, the node
		// lifecycle controller marks the Node NotReady and taints it, and the
		// taint-based eviction deletes the pods there (their tolerations say
		// at once; the default would be after 300 s). That is Kubernetes, not
		// the KEPs; what the KEPs say is about the implementation's objects:
		//   KEP-6276 (test plan): "Single-pod replacement: a deleted pod is
		//     replaced without recreating the PodGroup."
		//   KEP-6277: "Once pods exist, it discovers and uses whatever is
		//     already there [...]; it does not create missing objects." and
		//     "There is no operation in this design that recreates the
		//     PodGroup. A StatefulSet keeps one PodGroup, with a stable
		//     identity, for its entire lifetime".
		// So: no Workload or PodGroup is created or deleted from the stop to
		// the end, none is duplicated even for an instant, minCounts stay,
		// the Deployment's replacements join its PodGroup while the node is
		// down, and once it is back (the StatefulSet's pods are recreated
		// under their names only when the kubelet has finished deleting them)
		// both apps run whole in their own objects again.
		ginkgo.It("keeps each gang's one Workload and PodGroup when a worker running it stops, and converges once the worker is back", func(ctx context.Context) {
			framework.RequireFaults(ctx, framework.FaultStopNode, framework.FaultStartNode)
			node := pickWorker(ctx, f)
			dups := framework.WatchForDuplicates(ctx, f.ClientSet, f.Namespace)
			d := apps.Deployment(createDeploymentOn(ctx, f, "on-worker-d", 3, node))
			s := apps.StatefulSet(createStatefulSetOn(ctx, f, "on-worker-s", 2, node))
			dBefore, sBefore := apps.WaitForGang(ctx, f, d, 3, 3), apps.WaitForGang(ctx, f, s, 2, 2)
			dOn, sOn := dBefore.PodNames(onNode(node)), sBefore.PodNames(onNode(node))
			gomega.Expect(dOn).NotTo(gomega.BeEmpty(), "the spec needs a pod of %s on %s (its pods prefer that node): %s", d, node, dBefore)
			gomega.Expect(sOn).NotTo(gomega.BeEmpty(), "the spec needs a pod of %s on %s (its pods prefer that node): %s", s, node, sBefore)
			history := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource)

			ginkgo.By(fmt.Sprintf("stopping worker %s, which runs %v and %v", node, dOn, sOn))
			start := framework.StopNode(ctx, node)
			waitNodeNotReady(ctx, f, node)
			waitPodsLeaving(ctx, f, node, append(podUIDs(dBefore, dOn), podUIDs(sBefore, sOn)...))

			ginkgo.By("while the worker is down: the Deployment's replacements run in its one PodGroup, the StatefulSet's objects stay")
			dDown := apps.WaitForGang(ctx, recovering(f), d, 3, 3)
			apps.ExpectSameObjects(dDown, dBefore)
			apps.ExpectSameObjects(apps.Read(ctx, f, s), sBefore)

			ginkgo.By(fmt.Sprintf("starting worker %s again", node))
			start(ctx)
			dAfter, sAfter := apps.WaitForGang(ctx, recovering(f), d, 3, 3), apps.WaitForGang(ctx, recovering(f), s, 2, 2)
			apps.ExpectSameObjects(dAfter, dBefore)
			apps.ExpectSameObjects(sAfter, sBefore)
			// The pods elsewhere were not touched.
			apps.ExpectPodsUndisturbed(dAfter.WithPods(dBefore.PodNames(offNode(node))...), dBefore.WithPods(dBefore.PodNames(offNode(node))...))
			apps.ExpectPodsUndisturbed(sAfter.WithPods(sBefore.PodNames(offNode(node))...), sBefore.WithPods(sBefore.PodNames(offNode(node))...))
			expectNoObjectCreatedOrDeleted(history)
			expectMinCountsHeld(history, minCountsOf(dBefore, sBefore))
			dups.ExpectNone()
		})

		// The implementation's controller process dies (SIGKILL: no graceful
		// shutdown, wherever it is in its writes) in the middle of a rollout
		// and is started again, as a kubelet restarts its container.
		//   KEP-6276: "Supported by deterministic naming and reconciliation,
		//     creation is fully idempotent so that controllers recover
		//     missing objects after crashes"; "Both naming patterns are stable
		//     across controller restarts."; "With Recreate strategy, the old
		//     ReplicaSet scales to zero and its PodGroup and ResourceClaims are
		//     released before the new ReplicaSet is created."; "When the
		//     ReplicaSet has zero desired replicas, ensurePodGroupForReplicaSet
		//     calls deletePodGroupForReplicaSet to remove the PodGroup."
		ginkgo.It("converges on one PodGroup for the new revision when the implementation's controller is killed during a gang Deployment's Recreate rollout", func(ctx context.Context) {
			framework.RequireControllerKill()
			dups := framework.WatchForDuplicates(ctx, f.ClientSet, f.Namespace)
			a := apps.Deployment(createDeployment(ctx, f, "killed", 3, gangDeployment()))
			before := apps.WaitForGang(ctx, f, a, 3, 3)
			history := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource)

			// No wait between the two: the kill lands wherever the controller
			// is in the rollout (seeing it, scaling the old ReplicaSet to zero,
			// deleting its PodGroup, creating the new ReplicaSet, its PodGroup,
			// its pods).
			ginkgo.By("rolling out a new revision and killing the controller at once")
			updateDeploymentTemplate(ctx, f, a)
			framework.KillImplementationControllers(ctx)

			expectRolledOut(ctx, f, a, before)
			// One PodGroup made for the new revision, the old one's removed, the
			// Workload left as it is: nothing else was created or deleted.
			gomega.Expect(history.Creations("workloads")).To(gomega.BeEmpty(), "Workloads created during the rollout:\n%s", history)
			gomega.Expect(history.Deletions("workloads")).To(gomega.BeEmpty(), "Workloads deleted during the rollout:\n%s", history)
			gomega.Expect(history.Creations("podgroups")).To(gomega.HaveLen(1), "PodGroup creations during the rollout (one, the new revision's):\n%s", history)
			expectMinCountsHeld(history, every(3))
			dups.ExpectNone()
		})

		//   KEP-6277: "the controller never blindly creates, it discovers first
		//     and creates only what is missing, which is what makes crash
		//     recovery [...] safe."; "A StatefulSet keeps one PodGroup, with a
		//     stable identity, for its entire lifetime; [...] rolling updates
		//     leave both untouched."; "Pods keep the same podGroupName across
		//     revisions".
		ginkgo.It("keeps a gang StatefulSet's one Workload and PodGroup when the implementation's controller is killed during its rolling update", func(ctx context.Context) {
			framework.RequireControllerKill()
			dups := framework.WatchForDuplicates(ctx, f.ClientSet, f.Namespace)
			s := apps.StatefulSet(createStatefulSet(ctx, f, "killed", 3, true, gangStatefulSet()))
			before := apps.WaitForGang(ctx, f, s, 3, 3)
			history := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource)

			// As above: the kill lands wherever the controller is in the
			// rolling update (a pod of the old revision deleted, its
			// replacement created, waiting for it to be Ready, the next one).
			ginkgo.By("rolling out a new revision and killing the controller at once")
			_, err := framework.Intent.UpdateStatefulSet(ctx, f.Namespace, s.Name, func(set *appsv1.StatefulSet, _ **framework.StatefulSetScheduling) {
				builder.SetRevision(&set.Spec.Template, "2")
			})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			framework.KillImplementationControllers(ctx)

			waitStatefulSetRollout(ctx, recovering(f), s, func(r stsRollout) bool { return r.Done }, "the rolling update to finish")
			after := apps.WaitForGang(ctx, recovering(f), s, 3, 3)
			apps.ExpectSameObjects(after, before)
			for name, uid := range after.PodUIDs() {
				gomega.Expect(before.PodUIDs()[name]).NotTo(gomega.Equal(uid), "pod %s was not replaced by the rolling update: %s", name, after)
			}
			expectNoObjectCreatedOrDeleted(history)
			// "Pod count does not change during a rolling update, so minCount
			// does not change either."
			expectMinCountsHeld(history, every(3))
			dups.ExpectNone()
		})
	})

// updateDeploymentTemplate writes a new revision of a's pod template.
func updateDeploymentTemplate(ctx context.Context, f *framework.Framework, a apps.App) {
	ginkgo.GinkgoHelper()
	_, err := framework.Intent.UpdateDeployment(ctx, f.Namespace, a.Name, func(d *appsv1.Deployment, _ **framework.DeploymentScheduling) {
		builder.SetRevision(&d.Spec.Template, "2")
	})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
}

// rollOutDeployment starts a new revision of a and waits until its
// ReplicaSet exists: the rollout is under way.
func rollOutDeployment(ctx context.Context, f *framework.Framework, a apps.App) {
	ginkgo.GinkgoHelper()
	updateDeploymentTemplate(ctx, f, a)
	gomega.Eventually(ctx, func(ctx context.Context) int { return len(apps.ReplicaSets(ctx, f, a)) }).
		WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal(2), "the new revision's ReplicaSet")
}

// expectRolledOut waits until a's new revision runs as a gang of 3 and
// asserts it runs in a PodGroup of its own, in the same Workload, with no
// pod of the old revision left.
func expectRolledOut(ctx context.Context, f *framework.Framework, a apps.App, before apps.State) {
	ginkgo.GinkgoHelper()
	// The old revision was a gang of 3 too: wait for one whose PodGroup and
	// pods are all new, not for a gang of 3 (true before the rollout began).
	oldPodGroup := before.LivePodGroups()[0].UID
	after := apps.WaitForState(ctx, recovering(f), a, "the new revision running as a gang of 3 in a PodGroup of its own, no pod of the old one left",
		gomega.SatisfyAll(apps.Gang(3, 3), gomega.WithTransform(func(s apps.State) bool {
			if len(s.LivePodGroups()) != 1 || s.LivePodGroups()[0].UID == oldPodGroup {
				return false
			}
			for _, uid := range s.PodUIDs() {
				if slices.Contains(slices.Collect(maps.Values(before.PodUIDs())), uid) {
					return false
				}
			}
			return true
		}, gomega.BeTrue())))
	gomega.Expect(after.LivePodGroups()[0].UID).NotTo(gomega.Equal(before.LivePodGroups()[0].UID), "the new revision runs in a PodGroup of its own")
	gomega.Expect(after.Workloads[0].UID).To(gomega.Equal(before.Workloads[0].UID), "the Deployment keeps its one Workload across revisions")
	for name, uid := range after.PodUIDs() {
		gomega.Expect(before.PodUIDs()).NotTo(gomega.ContainElement(uid), "pod %s of the old revision survived a Recreate rollout", name)
	}
}

// expectNoObjectCreatedOrDeleted: since h started, no Workload or PodGroup
// was created or deleted (updates, such as the scheduler's status, may be).
func expectNoObjectCreatedOrDeleted(h *framework.WriteHistory) {
	ginkgo.GinkgoHelper()
	for _, r := range []string{"workloads", "podgroups"} {
		gomega.Expect(h.Creations(r)).To(gomega.BeEmpty(), "%s created during the fault:\n%s", r, h)
		gomega.Expect(h.Deletions(r)).To(gomega.BeEmpty(), "%s deleted during the fault:\n%s", r, h)
	}
}

// expectMinCountsHeld asserts that every write of a Workload or PodGroup
// since h started carried the minCount want gives for it (its app's
// replicas, unchanged by the fault): KEP-6276 "Gang minCount defaults to
// spec.replicas when unset", KEP-6277 "For Alpha the controller always
// derives it from spec.replicas". A fault changes neither; an implementation
// that lowers minCount to the pods it still sees, even for a moment, breaks
// the gang's guarantee for every replacement scheduled meanwhile.
func expectMinCountsHeld(h *framework.WriteHistory, want func(c framework.Change) (int32, bool)) {
	ginkgo.GinkgoHelper()
	for _, c := range h.Sorted() {
		if c.Resource != "workloads" && c.Resource != "podgroups" {
			continue
		}
		if w, ok := want(c); ok {
			gomega.Expect(c.MinCount).To(gomega.Equal(w), "a write of %s/%s with minCount %d, not %d (the replicas, which the fault did not change):\n%s", c.Resource, c.Name, c.MinCount, w, h)
		}
	}
}

// minCountsOf gives, by UID, the minCount of every Workload and PodGroup of states.
func minCountsOf(states ...apps.State) func(framework.Change) (int32, bool) {
	m := map[string]int32{}
	for _, s := range states {
		for _, o := range append(append([]apps.Object{}, s.Workloads...), s.PodGroups...) {
			m[string(o.UID)] = o.MinCount
		}
	}
	return func(c framework.Change) (int32, bool) { v, ok := m[c.UID]; return v, ok }
}

// every gives n for any object.
func every(n int32) func(framework.Change) (int32, bool) {
	return func(framework.Change) (int32, bool) { return n, true }
}

// pickWorker is the node a worker-stop spec stops: the first, by name, of
// the Ready, schedulable nodes that are not control-plane nodes.
func pickWorker(ctx context.Context, f *framework.Framework) string {
	ginkgo.GinkgoHelper()
	nodes, err := f.ClientSet.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	var workers []string
	for _, n := range nodes.Items {
		if _, cp := n.Labels["node-role.kubernetes.io/control-plane"]; cp || n.Spec.Unschedulable || !nodeReady(&n) {
			continue
		}
		workers = append(workers, n.Name)
	}
	if len(workers) < 2 {
		ginkgo.Skip(fmt.Sprintf("stopping a worker needs two Ready workers or more (the gangs' replacements go to another); found %v", workers))
	}
	slices.Sort(workers)
	return workers[0]
}

// nodeReady: Ready, and no taint the node lifecycle controller puts on a
// node it cannot hear from.
func nodeReady(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeNotReady {
			return false
		}
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// preferNode makes pods prefer node and leave it at once when it becomes
// unreachable or not ready: tolerationSeconds 0 for the taints the node
// lifecycle controller puts on such a node (the API's default adds 300 s).
func preferNode(spec *corev1.PodSpec, node string) {
	spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100, Preference: corev1.NodeSelectorTerm{
			MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
		}}},
	}}
	for _, taint := range []string{corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady} {
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: taint, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](0)})
	}
}

func createDeploymentOn(ctx context.Context, f *framework.Framework, name string, replicas int32, node string) *appsv1.Deployment {
	ginkgo.GinkgoHelper()
	d := builder.Deployment(name, f.Namespace).Replicas(replicas).Recreate().Request(corev1.ResourceCPU, "100m").Obj()
	preferNode(&d.Spec.Template.Spec, node)
	created, err := framework.Intent.CreateDeployment(ctx, d, gangDeployment())
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating Deployment %s", name)
	return created
}

func createStatefulSetOn(ctx context.Context, f *framework.Framework, name string, replicas int32, node string) *appsv1.StatefulSet {
	ginkgo.GinkgoHelper()
	set := builder.StatefulSet(name, f.Namespace).Replicas(replicas).Parallel().Request(corev1.ResourceCPU, "100m").Obj()
	preferNode(&set.Spec.Template.Spec, node)
	created, err := framework.Intent.CreateStatefulSet(ctx, set, gangStatefulSet())
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating StatefulSet %s", name)
	return created
}

// onNode and offNode select the pods on node and elsewhere (State.PodNames).
func onNode(node string) func(apps.Member) bool {
	return func(p apps.Member) bool { return p.Node == node }
}

func offNode(node string) func(apps.Member) bool {
	return func(p apps.Member) bool { return p.Node != node }
}

// podUIDs are the UIDs of the named pods of s.
func podUIDs(s apps.State, names []string) []types.UID {
	var out []types.UID
	for _, n := range names {
		out = append(out, s.PodUIDs()[n])
	}
	return out
}

// waitNodeNotReady waits until node's Ready condition is no longer True:
// the stop is real, seen by the node lifecycle controller.
func waitNodeNotReady(ctx context.Context, f *framework.Framework, node string) {
	ginkgo.GinkgoHelper()
	gomega.Eventually(ctx, func(ctx context.Context) (string, error) {
		n, err := f.ClientSet.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return string(c.Status), nil
			}
		}
		return "no Ready condition", nil
	}).WithTimeout(recovering(f).Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).ShouldNot(gomega.Equal(string(corev1.ConditionTrue)),
		"waiting for stopped node %s to turn NotReady (the node lifecycle controller's grace period)", node)
}

// waitPodsLeaving waits until each pod is being deleted or gone: the
// taint-based eviction of the stopped node's pods (Kubernetes', which their
// zero tolerationSeconds make immediate) has happened. That eviction is the
// cluster's, not the implementation's, and the node lifecycle controller may
// withhold it (it stops evicting in a zone it judges disrupted); so when it
// has not come within evictionWait the spec says why it may not have, with
// the Nodes as they stand, and deletes the pods itself, as an operator
// clearing a dead node does. They then stand where an eviction leaves them:
// being deleted, held by the stopped kubelet.
func waitPodsLeaving(ctx context.Context, f *framework.Framework, node string, uids []types.UID) {
	ginkgo.GinkgoHelper()
	staying := func(ctx context.Context) ([]corev1.Pod, error) {
		list, err := f.ClientSet.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		var out []corev1.Pod
		for _, p := range list.Items {
			if slices.Contains(uids, p.UID) && p.DeletionTimestamp == nil {
				out = append(out, p)
			}
		}
		return out, nil
	}
	var left []corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, f.Timeouts.Poll, evictionWait, true, func(ctx context.Context) (bool, error) {
		var err error
		left, err = staying(ctx)
		return err == nil && len(left) == 0, nil
	})
	if err == nil {
		return
	}
	gomega.Expect(ctx.Err()).NotTo(gomega.HaveOccurred())
	why := fmt.Sprintf("no taint-based eviction of %d pod(s) of stopped node %s within %s; the Nodes now: %s", len(left), node, evictionWait, nodesSummary(ctx, f))
	ginkgo.AddReportEntry("eviction withheld", why)
	ginkgo.By(why + "; deleting the pods as an operator would")
	for _, p := range left {
		err := f.ClientSet.CoreV1().Pods(f.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
		if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "deleting pod %s of stopped node %s", p.Name, node)
		}
	}
	gomega.Eventually(ctx, staying).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.BeEmpty(),
		"waiting for the pods of stopped node %s to be deleted", node)
}

// evictionWait bounds the wait for the taint-based eviction of a stopped
// node's pods once the Node is NotReady: the node lifecycle controller taints
// it within a monitor period or two and the eviction of a pod that
// tolerates nothing is immediate, so this is ample.
const evictionWait = 2 * time.Minute

// nodesSummary is each Node's Ready status, taints and zone: what the node
// lifecycle controller decides disruption and eviction by.
func nodesSummary(ctx context.Context, f *framework.Framework) string {
	nodes, err := f.ClientSet.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "(cannot list Nodes: " + err.Error() + ")"
	}
	var out []string
	for _, n := range nodes.Items {
		ready := "no Ready condition"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = fmt.Sprintf("Ready=%s since %s", c.Status, c.LastTransitionTime.UTC().Format(time.TimeOnly))
			}
		}
		var taints []string
		for _, t := range n.Spec.Taints {
			taints = append(taints, t.Key+":"+string(t.Effect))
		}
		out = append(out, fmt.Sprintf("%s(zone %q, %s, taints %v)", n.Name, n.Labels[corev1.LabelTopologyZone], ready, taints))
	}
	return strings.Join(out, "; ")
}

// stsRollout is where a StatefulSet's rolling update stands.
type stsRollout struct {
	// Updated counts live pods of the update revision; Done: every pod is
	// of it and the controller says the update revision is current.
	Updated int
	Done    bool
	Detail  string
}

// waitStatefulSetRollout waits until the rollout of s satisfies cond.
func waitStatefulSetRollout(ctx context.Context, f *framework.Framework, s apps.App, cond func(stsRollout) bool, what string) {
	ginkgo.GinkgoHelper()
	var last stsRollout
	gomega.Eventually(ctx, func(ctx context.Context) (bool, error) {
		set, err := f.ClientSet.AppsV1().StatefulSets(f.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pods, err := framework.ListPods(ctx, apps.Pods(f, s))
		if err != nil {
			return false, err
		}
		st := set.Status
		r := stsRollout{Detail: fmt.Sprintf("generation %d observed %d, update revision %s, current %s, pods:", set.Generation, st.ObservedGeneration, st.UpdateRevision, st.CurrentRevision)}
		for _, p := range pods {
			if p.DeletionTimestamp == nil && st.UpdateRevision != "" && p.Labels[appsv1.ControllerRevisionHashLabelKey] == st.UpdateRevision {
				r.Updated++
			}
			r.Detail += fmt.Sprintf(" %s(%s)", p.Name, p.Labels[appsv1.ControllerRevisionHashLabelKey])
		}
		r.Done = st.ObservedGeneration >= set.Generation && st.UpdateRevision != "" && st.CurrentRevision == st.UpdateRevision &&
			r.Updated == len(pods) && int32(r.Updated) == ptr.Deref(set.Spec.Replicas, 1)
		last = r
		return cond(r), nil
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.BeTrue(), func() string {
		return fmt.Sprintf("waiting for %s of %s: %s", what, s, last.Detail)
	})
}

// reflectorBackoffCap is how long a client-go informer may wait before it
// tries again once the apiserver is back: while it is unreachable, each
// reflector backs off exponentially up to 30 s with full jitter (client-go's
// reflector backoff manager: 800 ms doubling to 30 s, jitter 1.0). Measured
// here: after a 17 s apiserver restart under load, the last informers of the
// reference relisted 65 s after the restart. Any client-go-based
// implementation inherits this; the KEPs set no recovery time.
const reflectorBackoffCap = 60 * time.Second

// recovering returns f with its bounds stretched by reflectorBackoffCap, for
// the waits right after a control-plane outage.
func recovering(f *framework.Framework) *framework.Framework {
	g := *f
	g.Timeouts.PodsBound += reflectorBackoffCap
	return &g
}

// latestResourceVersion is the resourceVersion of a list of the namespace's
// pods: at least that of every event a watcher has seen so far.
func latestResourceVersion(ctx context.Context, f *framework.Framework) string {
	ginkgo.GinkgoHelper()
	list, err := f.ClientSet.CoreV1().Pods(f.Namespace).List(ctx, metav1.ListOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return list.ResourceVersion
}

// expectWatchExpired proves the fault is real: a watch resuming from rv, as
// every informer of the implementation must after the restart, is refused
// with 410 Gone, so the implementation has to relist.
func expectWatchExpired(ctx context.Context, f *framework.Framework, rv string) {
	ginkgo.GinkgoHelper()
	gomega.Eventually(ctx, func(ctx context.Context) error {
		w, err := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return nil
			}
			return err
		}
		defer w.Stop()
		// A watch cache refuses an expired resourceVersion with an error event.
		ev, ok := <-w.ResultChan()
		if !ok {
			return fmt.Errorf("the watch from resourceVersion %s closed without an event", rv)
		}
		if st, isStatus := ev.Object.(*metav1.Status); isStatus && (st.Code == http.StatusGone || st.Reason == metav1.StatusReasonExpired || st.Reason == metav1.StatusReasonGone) {
			return nil
		}
		return fmt.Errorf("a watch from resourceVersion %s still works (got a %s event): the watches did not expire", rv, ev.Type)
	}).WithTimeout(f.Timeouts.Namespace).WithPolling(f.Timeouts.Poll).Should(gomega.Succeed())
}
