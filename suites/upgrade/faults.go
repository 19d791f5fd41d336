package upgrade

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// Faults in the middle of work, not between steps: a component of the
// control plane goes away while the implementation is half-way through a
// rollout or a scale, or every watch it holds expires. Whatever the timing,
// the implementation must converge with no duplicate Workload or PodGroup,
// even for an instant (the duplicate watcher sees every intermediate state),
// no running pod deleted that the operation keeps, and minCounts right.
var _ = ginkgo.Describe("Control-plane faults in the middle of a rollout or a scale", ginkgo.Label("Fault"),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment, framework.WorkloadWithStatefulSet),
	framework.Serial, framework.Disruptive, func() {
		f := framework.New("faults")

		ginkgo.It("converges on one PodGroup for the new revision when kube-apiserver restarts during a gang Deployment's Recreate rollout", func(ctx context.Context) {
			lc := framework.RequireLocalCluster()
			dups := framework.WatchForDuplicates(ctx, f.ClientSet, f.Namespace)
			a := apps.Deployment(createDeployment(ctx, f, "rollout", 3, gangDeployment()))
			before := apps.WaitForGang(ctx, f, a, 3, 3)

			ginkgo.By("rolling out a new revision and restarting kube-apiserver as soon as its ReplicaSet exists")
			_, err := framework.Intent.UpdateDeployment(ctx, f.Namespace, a.Name, func(d *appsv1.Deployment, _ **framework.DeploymentScheduling) {
				if d.Spec.Template.Annotations == nil {
					d.Spec.Template.Annotations = map[string]string{}
				}
				d.Spec.Template.Annotations["was-harness.io/revision"] = "2"
			})
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Eventually(ctx, func(ctx context.Context) int { return len(apps.ReplicaSets(ctx, f, a)) }).
				WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal(2), "the new revision's ReplicaSet")
			gomega.Expect(lc.Restart(ctx, localcluster.APIServer, nil)).To(gomega.Succeed())

			after := apps.WaitForGang(ctx, recovering(f), a, 3, 3)
			gomega.Expect(after.LivePodGroups()[0].UID).NotTo(gomega.Equal(before.LivePodGroups()[0].UID), "the new revision runs in a PodGroup of its own")
			gomega.Expect(after.Workloads[0].UID).To(gomega.Equal(before.Workloads[0].UID), "the Deployment keeps its one Workload across revisions")
			for uid := range after.PodUIDs() {
				gomega.Expect(before.PodUIDs()).NotTo(gomega.ContainElement(types.UID(uid)), "a pod of the old revision survived a Recreate rollout")
			}
			dups.ExpectNone()
		})

		// A scale in flight when a component goes away: the existing pods stay,
		// the same Workload and PodGroup are updated in place.
		scaleThrough := func(ctx context.Context, a apps.App, from, to int32, component localcluster.Component) {
			lc := framework.RequireLocalCluster()
			dups := framework.WatchForDuplicates(ctx, f.ClientSet, f.Namespace)
			before := apps.WaitForGang(ctx, f, a, from, int(from))

			ginkgo.By(fmt.Sprintf("scaling to %d and restarting %s at once", to, component))
			apps.Scale(ctx, f, a, to)
			gomega.Expect(lc.Restart(ctx, component, nil)).To(gomega.Succeed())

			after := apps.WaitForGang(ctx, recovering(f), a, to, int(to))
			apps.ExpectSameObjects(after, before)
			apps.ExpectPodsUndisturbed(after, before)
			dups.ExpectNone()
		}

		ginkgo.It("scales a gang StatefulSet from 2 to 6 through a kube-apiserver restart, keeping pods 0 and 1", func(ctx context.Context) {
			framework.RequireLocalCluster()
			scaleThrough(ctx, apps.StatefulSet(createStatefulSet(ctx, f, "grow", 2, true, gangStatefulSet())), 2, 6, localcluster.APIServer)
		})

		ginkgo.It("scales a gang Deployment from 3 to 6 through an etcd restart, keeping the running pods", func(ctx context.Context) {
			framework.RequireLocalCluster()
			scaleThrough(ctx, apps.Deployment(createDeployment(ctx, f, "scale", 3, gangDeployment())), 3, 6, localcluster.Etcd)
		})

		ginkgo.It("relists when every watch expires (etcd compacted past them, kube-apiserver restarted) and converges on the changes", func(ctx context.Context) {
			lc := framework.RequireLocalCluster()
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
			_, err := lc.CompactEtcd(ctx)
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			gomega.Expect(lc.Restart(ctx, localcluster.APIServer, nil)).To(gomega.Succeed())
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
	})

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
