package deployment

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// KEP-6276, Notes/Constraints/Caveats: "revisionHistoryLimit retains old
// ReplicaSets for rollback metadata only. PodGroups are explicitly deleted at
// scale-to-zero, so they are already gone before the ReplicaSet becomes a
// history entry. If explicit deletion is missed (e.g., crash), owner-reference
// GC removes the PodGroup when the ReplicaSet is pruned".
var _ = ginkgo.Describe("Deployment revision history", framework.KEP(6276),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment), func() {
		f := framework.New("deploy-history")

		ginkgo.It("leaves no PodGroup behind a ReplicaSet the revision history prunes, also when the explicit delete was missed; the live revision's PodGroup stays", framework.ID("D-I9"), func(ctx context.Context) {
			rec := framework.RecordWrites(ctx, f.Namespace, framework.ReplicaSetsResource, framework.PodGroupsResource)
			obj := recreate(f, "history", 2, "100m").Obj()
			obj.Spec.RevisionHistoryLimit = ptr.To[int32](1)
			h := &revisions{f: f, d: create(ctx, obj, gang(nil)), rec: rec}
			h.waitLive(ctx, false)

			ginkgo.By("rolling through revisions 2 and 3 with revisionHistoryLimit 1: revision 1's ReplicaSet is pruned")
			h.rollTo(ctx, 2, false)
			h.rollTo(ctx, 3, false)
			h.waitPruned(ctx, 1)
			h.expectOnlyLivePodGroup(ctx)

			// A missed explicit delete, from outside the implementation: every
			// delete of a PodGroup in the namespace is denied (the garbage
			// collector's too) while revision 3 goes to zero and is pruned.
			// The spec deletes the old revision's pods itself, as a user
			// may: an implementation may rightly hold them until its
			// PodGroup delete succeeds, and then nothing would be pruned.
			ginkgo.By("denying PodGroup deletes while revisions 4 and 5 roll out: revision 3's ReplicaSet is pruned with its PodGroup still there")
			denial := denyPodGroupDeletes(ctx, f, h.live().pg.Name)
			h.rollTo(ctx, 4, true)
			h.rollTo(ctx, 5, true)
			h.waitPruned(ctx, 3)
			missed := h.revs[3-1].pg
			_, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).Get(ctx, missed.Name, metav1.GetOptions{})
			gomega.Expect(err).NotTo(gomega.HaveOccurred(),
				"PodGroup %s of revision 3 is gone although every delete was denied: the spec did not make the explicit delete miss", missed.Name)

			ginkgo.By("admitting deletes again: the pruned ReplicaSet's PodGroup must go")
			denial.Lift(ctx)
			h.expectOnlyLivePodGroup(ctx)
			rec.Stop()
			for _, r := range h.revs[:len(h.revs)-1] {
				if pruned, ok := rec.First("replicasets", func(c framework.Change) bool { return c.UID == string(r.rsUID) && c.Type == watch.Deleted }); ok {
					how := h.deletedHow(r, pruned)
					ginkgo.AddReportEntry(fmt.Sprintf("revision %d: PodGroup %s", r.n, r.pg.Name), how)
					if r.n == 1 { // the undisturbed path: the reading the implementation takes
						framework.RecordReading("revision 1's PodGroup " + how)
					}
				}
			}
		})
	})

// revision is one revision of the Deployment: its ReplicaSet and the
// PodGroup that ReplicaSet controlled while it ran.
type revision struct {
	n  int
	rs types.NamespacedName
	pg types.NamespacedName
	// UIDs: a name may come back (the same pod template), the object not.
	rsUID, pgUID types.UID
}

// revisions rolls a gang Deployment through pod-template revisions and
// remembers each one's ReplicaSet and PodGroup.
type revisions struct {
	f    *framework.Framework
	d    *appsv1.Deployment
	rec  *framework.WriteHistory
	revs []revision
}

func (h *revisions) live() revision { return h.revs[len(h.revs)-1] }

// rollTo changes the pod template to revision n and waits for the rollout;
// helpPods deletes the old revision's pods once their ReplicaSet is at zero.
func (h *revisions) rollTo(ctx context.Context, n int, helpPods bool) {
	ginkgo.GinkgoHelper()
	_, err := framework.Intent.UpdateDeployment(ctx, h.f.Namespace, h.d.Name, func(d *appsv1.Deployment, _ **framework.DeploymentScheduling) {
		builder.SetRevision(&d.Spec.Template, fmt.Sprint(n))
	})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "changing the pod template to revision %d", n)
	h.waitLive(ctx, helpPods)
	gomega.Expect(h.revs).To(gomega.HaveLen(n), "revisions seen: %v", h.revs)
}

// waitLive waits until the Deployment's newest ReplicaSet runs all its pods,
// no older pod is left, and that ReplicaSet controls exactly one live
// PodGroup; it records that revision.
func (h *revisions) waitLive(ctx context.Context, helpPods bool) {
	ginkgo.GinkgoHelper()
	f, want := h.f, ptr.Deref(h.d.Spec.Replicas, 1)
	var got revision
	gomega.Eventually(ctx, func(ctx context.Context) (string, error) {
		d, err := f.ClientSet.AppsV1().Deployments(f.Namespace).Get(ctx, h.d.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		// The old revision's pods go first (Recreate): help them before
		// the rollout can progress.
		var active []appsv1.ReplicaSet
		for _, rs := range replicaSets(ctx, f, d) {
			if ptr.Deref(rs.Spec.Replicas, 0) > 0 {
				active = append(active, rs)
			} else if helpPods {
				if err := h.deleteOldPods(ctx, &rs); err != nil {
					return "", err
				}
			}
		}
		st := d.Status
		if st.ObservedGeneration < d.Generation || st.UpdatedReplicas != want || st.AvailableReplicas != want || st.Replicas != want {
			return fmt.Sprintf("rollout: generation %d/%d, replicas %d, updated %d, available %d", st.ObservedGeneration, d.Generation, st.Replicas, st.UpdatedReplicas, st.AvailableReplicas), nil
		}
		if len(active) != 1 || active[0].Status.ReadyReplicas != want {
			return fmt.Sprintf("%d ReplicaSets with replicas", len(active)), nil
		}
		rs := active[0]
		var pgs []string
		for _, pg := range podGroups(ctx, f) {
			if metav1.IsControlledBy(&pg, &rs) && pg.DeletionTimestamp == nil {
				pgs = append(pgs, pg.Name)
				got = revision{n: len(h.revs) + 1, rs: types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}, rsUID: rs.UID,
					pg: types.NamespacedName{Namespace: pg.Namespace, Name: pg.Name}, pgUID: pg.UID}
			}
		}
		if len(pgs) != 1 {
			return fmt.Sprintf("ReplicaSet %s controls live PodGroups %v", rs.Name, pgs), nil
		}
		return "live", nil
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal("live"),
		"waiting for revision %d of %s to run its %d pods in one PodGroup of its ReplicaSet", len(h.revs)+1, h.d.Name, want)
	if len(h.revs) > 0 {
		gomega.Expect(got.rsUID).NotTo(gomega.Equal(h.live().rsUID), "the rollout to revision %d made no new ReplicaSet", got.n)
	}
	h.revs = append(h.revs, got)
}

// deleteOldPods deletes the pods of a ReplicaSet at zero replicas.
func (h *revisions) deleteOldPods(ctx context.Context, rs *appsv1.ReplicaSet) error {
	pods, err := framework.ListPods(ctx, podsOf(h.f, h.d))
	if err != nil {
		return err
	}
	for _, p := range pods {
		if !metav1.IsControlledBy(&p, rs) || p.DeletionTimestamp != nil {
			continue
		}
		ginkgo.GinkgoWriter.Printf("deleting pod %s of ReplicaSet %s at zero replicas\n", p.Name, rs.Name)
		if err := h.f.ClientSet.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// waitPruned waits until revision n's ReplicaSet is deleted (the revision
// history keeps one).
func (h *revisions) waitPruned(ctx context.Context, n int) {
	ginkgo.GinkgoHelper()
	r := h.revs[n-1]
	gomega.Eventually(ctx, func(ctx context.Context) (bool, error) {
		rs, err := h.f.ClientSet.AppsV1().ReplicaSets(r.rs.Namespace).Get(ctx, r.rs.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && rs.UID != r.rsUID, err
	}).WithTimeout(h.f.Timeouts.PodsBound).WithPolling(h.f.Timeouts.Poll).Should(gomega.BeTrue(),
		"waiting for revisionHistoryLimit 1 to prune revision %d's ReplicaSet %s", n, r.rs.Name)
}

// expectOnlyLivePodGroup waits until the namespace's only PodGroup is the
// live revision's, the same object as when it started: every older one
// (pruned or kept at zero in the history) is gone.
func (h *revisions) expectOnlyLivePodGroup(ctx context.Context) {
	ginkgo.GinkgoHelper()
	live := h.live()
	want := fmt.Sprintf("%s (%s)", live.pg.Name, live.pgUID)
	gomega.Eventually(ctx, func(ctx context.Context) []string {
		var out []string
		for _, pg := range podGroups(ctx, h.f) {
			s := fmt.Sprintf("%s (%s)", pg.Name, pg.UID)
			if pg.DeletionTimestamp != nil {
				s += " terminating"
			}
			if c := metav1.GetControllerOf(&pg); c != nil {
				s += " controlled by " + c.Kind + " " + c.Name
			} else if len(pg.OwnerReferences) > 0 {
				// What the garbage collector leaves: it drops the pruned
				// ReplicaSet's reference and keeps the PodGroup for its
				// other owner, the Workload, which lives.
				s += " with no controller (its ReplicaSet's reference dropped; kept for its other owners)"
			}
			if s != want+" controlled by ReplicaSet "+live.rs.Name {
				out = append(out, s)
			}
		}
		if !h.hasPodGroup(ctx, live) {
			out = append(out, "no live "+want)
		}
		return out
	}).WithTimeout(h.f.Timeouts.PodsBound).WithPolling(h.f.Timeouts.Poll).Should(gomega.BeEmpty(),
		"waiting until the only PodGroup is %s of the live revision's ReplicaSet %s; revisions: %v\nwrites seen:\n%s", want, live.rs.Name, h.revs, h.rec)
}

func (h *revisions) hasPodGroup(ctx context.Context, r revision) bool {
	pg, err := h.f.ClientSet.SchedulingV1beta1().PodGroups(r.pg.Namespace).Get(ctx, r.pg.Name, metav1.GetOptions{})
	return err == nil && pg.UID == r.pgUID && pg.DeletionTimestamp == nil
}

// deletedHow says, from the write history, whether r's PodGroup was going
// before its ReplicaSet was pruned (the implementation's explicit delete at
// zero replicas) or only after (the collector or the implementation, after
// the prune); both satisfy the KEP.
func (h *revisions) deletedHow(r revision, pruned framework.Change) string {
	gone, ok := h.rec.First("podgroups", func(c framework.Change) bool { return c.UID == string(r.pgUID) && c.Terminating })
	switch {
	case !ok:
		return "no deletion seen"
	case gone.Revision < pruned.Revision:
		return fmt.Sprintf("deleted before its ReplicaSet %s was pruned (rv %d < %d): the explicit delete at zero replicas", r.rs.Name, gone.Revision, pruned.Revision)
	default:
		return fmt.Sprintf("deleted after its ReplicaSet %s was pruned (rv %d > %d): the missed delete made up for", r.rs.Name, gone.Revision, pruned.Revision)
	}
}

func (r revision) String() string {
	return fmt.Sprintf("%d: ReplicaSet %s PodGroup %s", r.n, r.rs.Name, r.pg.Name)
}

// denyPodGroupDeletes denies every delete of a PodGroup in the spec's
// namespace (framework.DenyWrites); probe names one to try a dry-run delete on.
func denyPodGroupDeletes(ctx context.Context, f *framework.Framework, probe string) *framework.Denial {
	ginkgo.GinkgoHelper()
	pgs := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace)
	return framework.DenyWrites(ctx, f, "podgroups", admissionregistrationv1.Delete, func(ctx context.Context) error {
		return pgs.Delete(ctx, probe, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
	})
}
