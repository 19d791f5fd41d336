package upgrade

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// The Troubleshooting answers of both KEPs, for writes that fail while the
// API's storage is unavailable:
//
//	KEP-6276: "How does this feature react if the API server and/or etcd is
//	  unavailable? Deployment and ReplicaSet controllers cannot create
//	  Workloads or PodGroups. Retries with exponential backoff when
//	  kube-apiserver recovers. Existing Deployments with scheduling objects
//	  continue to run."
//	KEP-6277: "The StatefulSet controller cannot create Workload objects.
//	  StatefulSet reconciliation will retry with standard exponential
//	  backoff. No pods are created until the Workload is successfully
//	  created (for StatefulSets with gang scheduling enabled)."
//
// The fault specs (faults.go) take the API away by restarting etcd or
// kube-apiserver; every informer then relists and delivers an event for
// every object, which retries any dropped work by itself. Here the writes of
// Workloads and PodGroups in the spec's namespace fail with the apiserver's
// 500 (framework.FailWrites) while every watch stays up, so what converges
// once they succeed is the implementation's own retry, with nothing touching
// the Deployment or StatefulSet. It needs no hook and restarts nothing.
var _ = ginkgo.Describe("Workload and PodGroup writes failing with a server error", ginkgo.Label("Unavailable"),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithDeployment, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("unavailable")

		// outage is how long the writes fail after the action: the
		// retry window (the longest backoff the suite allows between two
		// retries), so an implementation that retries has retried and
		// failed more than once, and one that dropped the work after a
		// failure has seen its last event.
		outage := func() time.Duration { return f.Timeouts.RetryWindow }
		// afterOutage allows the backoff the failures built up: a retry
		// may wait about as long again as the writes have been failing.
		afterOutage := func(failedFor time.Duration) *framework.Framework {
			g := *f
			g.Timeouts.PodsBound += 2 * failedFor
			return &g
		}
		failCreates := func(ctx context.Context) *framework.Denial {
			probe := builder.Workload("probe", f.Namespace).PodGroupTemplate(builder.PodGroupTemplate("pods")).Obj()
			return framework.FailWrites(ctx, f, []string{"workloads", "podgroups"}, []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				func(ctx context.Context) error {
					_, err := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
					return err
				})
		}
		// createThrough creates a gang app while Workload and PodGroup creates
		// fail: for the outage it has no Workload, no PodGroup and no pod (a
		// pod without its PodGroup would bypass the gang); once creates
		// succeed it runs whole with nothing touching it.
		createThrough := func(ctx context.Context, create func() apps.App) {
			failing := failCreates(ctx)
			t0 := time.Now()
			a := create()
			ginkgo.By(fmt.Sprintf("for %s, while every Workload and PodGroup create fails with 500: no Workload, no PodGroup, no pod of %s", outage(), a))
			gomega.Consistently(ctx, func(ctx context.Context) apps.State { return apps.Read(ctx, f, a) }).
				WithTimeout(outage()).WithPolling(f.Timeouts.Poll).Should(gomega.SatisfyAll(
				apps.NoObjects(), gomega.HaveField("Pods", gomega.BeEmpty())),
				"%s while Workload and PodGroup creates fail: gang pods need their PodGroup first", a)

			failing.Lift(ctx)
			ginkgo.By("creates succeed again: the gang runs whole, with nothing touching " + a.String())
			apps.WaitForGang(ctx, afterOutage(time.Since(t0)), a, 3, 3)
		}

		ginkgo.It("creates no pod of a gang Deployment while Workload and PodGroup creates fail, and retries until it runs whole", framework.ID("D-P7"), framework.KEP(6276), func(ctx context.Context) {
			createThrough(ctx, func() apps.App { return apps.Deployment(createDeployment(ctx, f, "create", 3, gangDeployment())) })
		})

		ginkgo.It("creates no pod of a gang StatefulSet while Workload and PodGroup creates fail, and retries until it runs whole", framework.ID("S-P10"), framework.KEP(6277), func(ctx context.Context) {
			createThrough(ctx, func() apps.App {
				return apps.StatefulSet(createStatefulSet(ctx, f, "create", 3, true, gangStatefulSet()))
			})
		})

		//   KEP-6276: "When the ReplicaSet has zero desired replicas,
		//     ensurePodGroupForReplicaSet calls deletePodGroupForReplicaSet to
		//     remove the PodGroup." The delete fails for the outage. The
		//     implementation may rightly hold the pods until it succeeds, and a
		//     controller that retries a pod delete would then retry the
		//     PodGroup's with it; so the spec deletes the pods itself, as a
		//     user may, and the ReplicaSet is quiet at zero: only the
		//     implementation's own retry of the failed delete is left. Once
		//     deletes succeed the PodGroup goes, and the Workload stays.
		ginkgo.It("removes a gang Deployment's PodGroup at scale to zero once PodGroup deletes stop failing, keeping its Workload", framework.ID("D-P7"), framework.KEP(6276), func(ctx context.Context) {
			a := apps.Deployment(createDeployment(ctx, f, "zero", 3, gangDeployment()))
			before := apps.WaitForGang(ctx, f, a, 3, 3)
			pg := before.LivePodGroups()[0].Name
			pgs := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace)
			// Only PodGroup deletes fail: the Deployment side's Workload update
			// and the scale of the ReplicaSet go through, so the ReplicaSet is
			// at zero with its PodGroup still to delete.
			failing := framework.FailWrites(ctx, f, []string{"podgroups"}, []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
				func(ctx context.Context) error {
					return pgs.Delete(ctx, pg, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
				})

			t0 := time.Now()
			apps.Scale(ctx, f, a, 0)
			gomega.Eventually(ctx, func(ctx context.Context) []int32 {
				var replicas []int32
				for _, rs := range apps.ReplicaSets(ctx, f, a) {
					replicas = append(replicas, ptr.Deref(rs.Spec.Replicas, 1))
				}
				return replicas
			}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.HaveEach(gomega.BeZero()),
				"waiting for the ReplicaSets of %s to be scaled to zero", a)
			ginkgo.By("deleting the pods of " + a.String() + " as a user may, while PodGroup deletes fail")
			pods, err := framework.ListPods(ctx, apps.Pods(f, a))
			gomega.Expect(err).NotTo(gomega.HaveOccurred())
			for _, p := range pods {
				err := f.ClientSet.CoreV1().Pods(f.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
				gomega.Expect(ignoreNotFound(err)).To(gomega.Succeed(), "deleting pod %s", p.Name)
			}
			apps.WaitForState(ctx, f, a, "no pod left", gomega.SatisfyAll(gomega.HaveField("Pods", gomega.BeEmpty()), gomega.HaveField("Terminating", gomega.BeEmpty())))
			ginkgo.By(fmt.Sprintf("for %s more, while PodGroup deletes fail with 500: PodGroup %s stays", outage(), pg))
			gomega.Consistently(ctx, func(ctx context.Context) []string { return objectNames(apps.Read(ctx, f, a).LivePodGroups()) }).
				WithTimeout(outage()).WithPolling(f.Timeouts.Poll).Should(gomega.ConsistOf(pg),
				"PodGroup %s of %s while its deletes fail with 500", pg, a)

			failing.Lift(ctx)
			ginkgo.By("deletes succeed again: the PodGroup goes with nothing touching " + a.String())
			after := apps.WaitForState(ctx, afterOutage(time.Since(t0)), a, "no pod, no PodGroup, the same Workload", gomega.SatisfyAll(
				gomega.HaveField("Pods", gomega.BeEmpty()), gomega.HaveField("PodGroups", gomega.BeEmpty()),
				gomega.HaveField("Workloads", gomega.HaveLen(1))))
			gomega.Expect(after.Workloads[0].UID).To(gomega.Equal(before.Workloads[0].UID), "%s's Workload was replaced: %s", a, after)
		})
	})

func objectNames(objs []apps.Object) []string {
	out := []string{}
	for _, o := range objs {
		out = append(out, o.Name)
	}
	return out
}
