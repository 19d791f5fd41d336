package install

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workload-aware/apps-harness/deploy"
	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// The reference's Lease (its RBAC names it), in the install's own
// namespace, and short timings so a takeover happens within seconds.
const (
	leaseNamespace = deploy.Namespace
	leaseName      = "was-controller-manager"
)

var leaderElectionArgs = map[string]string{
	"leader-elect":                    "true",
	"leader-elect-resource-namespace": leaseNamespace,
	"leader-elect-resource-name":      leaseName,
	"leader-elect-lease-duration":     "6s",
	"leader-elect-renew-deadline":     "4s",
	"leader-elect-retry-period":       "1s",
}

var _ = ginkgo.Describe("Install of the reference implementation: leader election", framework.Harness, framework.Serial, framework.Disruptive, func() {
	f := framework.New("install-leader-election")

	// deploy/ runs a controller-manager on every control-plane node. Every
	// instance writes as the same service accounts, so the writes are told
	// apart by the User-Agent each instance tags with its Lease identity,
	// which the API server's audit log records. The second instance is a
	// process beside the local cluster's, or a bare Pod beside deploy/'s
	// DaemonSet on an existing cluster.
	ginkgo.It("runs the controllers in the Lease holder only, and another instance takes over when it is killed, with no duplicate Workload or PodGroup", func(ctx context.Context) {
		in := requireInstalled(ctx, f, framework.ReferenceControllerManager)
		auditLog := framework.RequireAuditLog()
		change := framework.ComponentChange{Component: framework.ReferenceControllerManager, ComponentConfig: localcluster.ComponentConfig{ExtraArgs: leaderElectionArgs}}
		framework.RequireReconfigure(change)
		requireLeaderKill(in)
		cs := f.ClientSet
		before := leaseHolder(ctx, f)
		framework.Reconfigure(ctx, framework.ReconfigureInput{Cluster: in.local, Changes: []framework.ComponentChange{change}})
		var leader string
		gomega.Eventually(ctx, func() string {
			leader = leaseHolder(ctx, f)
			return leader
		}).WithTimeout(time.Minute).WithPolling(time.Second).ShouldNot(gomega.Or(gomega.BeEmpty(), gomega.Equal(before)),
			"the restarted controller-manager never took the Lease %s/%s", leaseNamespace, leaseName)

		ginkgo.By("starting a second instance of the same binary with the same flags")
		standby := startSecondInstance(ctx, f, in)
		gomega.Expect(standby.identity).NotTo(gomega.Equal(leader))
		gomega.Expect(leaseHolder(ctx, f)).To(gomega.Equal(leader), "the Lease changed hands when a second instance started")

		dups := framework.WatchForDuplicates(ctx, cs, f.Namespace)
		writes := newWriteLog(auditLog, f.Namespace)
		first := createGang(ctx, f, "first", 2)
		apps.WaitForGang(ctx, f, first, 2, 2)
		byInstance := writes.byInstance()
		ginkgo.By(fmt.Sprintf("writes while %s leads: %v", leader, byInstance))
		gomega.Expect(byInstance).To(gomega.HaveKey(leader), "the leader wrote no Workload or PodGroup")
		gomega.Expect(byInstance).To(gomega.HaveLen(1), "an instance other than the leader %s wrote", leader)
		// Its silence proves something only if it ran meanwhile.
		gomega.Expect(standby.running(ctx)).To(gomega.Succeed(), "the second instance (%s)", standby.where)

		ginkgo.By("killing the leader " + leader)
		killed := time.Now()
		killLeader(ctx, in)
		var next string
		gomega.Eventually(ctx, func() string {
			next = leaseHolder(ctx, f)
			return next
		}).WithTimeout(time.Minute).WithPolling(time.Second).ShouldNot(gomega.Or(gomega.BeEmpty(), gomega.Equal(leader)),
			"no other instance took the Lease over from the killed %s", leader)
		if in.local != nil {
			// The killed process stays down until the cleanup: only the
			// second instance can take over.
			gomega.Expect(next).To(gomega.Equal(standby.identity), "the Lease went to neither the killed leader nor the second instance")
		}
		ginkgo.By(fmt.Sprintf("%s (%s) took the Lease over %s after the kill began", next, whose(next, leader, standby), takeoverTime(ctx, f, killed)))

		writes.reset()
		second := createGang(ctx, f, "second", 2)
		apps.Scale(ctx, f, first, 3)
		apps.WaitForGang(ctx, f, second, 2, 2)
		apps.WaitForGang(ctx, f, first, 3, 3)
		byInstance = writes.byInstance()
		ginkgo.By(fmt.Sprintf("writes after the takeover: %v", byInstance))
		gomega.Expect(byInstance).To(gomega.HaveKey(next), "the new leader wrote no Workload or PodGroup")
		gomega.Expect(byInstance).To(gomega.HaveLen(1), "an instance other than the new leader %s wrote", next)
		if next != standby.identity {
			// The killed pod's restarted container leads (an existing
			// cluster): the second instance stood by beside it.
			gomega.Expect(standby.running(ctx)).To(gomega.Succeed(), "the second instance (%s)", standby.where)
		}
		dups.ExpectNone()
	})
})

// requireLeaderKill skips the spec, saying why, unless the leader can be
// killed here: on an existing cluster through the controller-restart
// hook's kill.
func requireLeaderKill(in *installed) {
	ginkgo.GinkgoHelper()
	if in.local == nil {
		framework.RequireControllerKill()
	}
}

// killLeader SIGKILLs the Lease holder, as a crash or the OOM killer would:
// it gets no chance to release the Lease (a graceful stop does), so another
// instance must wait the lease out. On the local cluster the process stays
// down until the spec ends; on an existing cluster the hook's kill returns
// once the kubelet restarted the container and an identity other than the
// killed one holds the Lease: the restarted process (a new identity) and
// the standby both stand for it, and either may win.
func killLeader(ctx context.Context, in *installed) {
	ginkgo.GinkgoHelper()
	if in.local != nil {
		stopComponent(ctx, in.local, in.component)
		return
	}
	framework.KillImplementationControllers(ctx)
}

// whose names the instance that holds identity, for the report.
func whose(identity, killed string, standby *instance) string {
	killedHost, _, _ := strings.Cut(killed, "_")
	switch {
	case identity == standby.identity:
		return "the second instance, " + standby.where
	case strings.HasPrefix(identity, killedHost+"_"):
		return "the killed pod's container, restarted by the kubelet"
	}
	return "another instance"
}

// takeoverTime is how long after killed the Lease's holder acquired it.
func takeoverTime(ctx context.Context, f *framework.Framework, killed time.Time) string {
	ginkgo.GinkgoHelper()
	lease, err := f.ClientSet.CoordinationV1().Leases(leaseNamespace).Get(ctx, leaseName, metav1.GetOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	if lease.Spec.AcquireTime == nil {
		return "(no acquireTime)"
	}
	return lease.Spec.AcquireTime.Sub(killed).Round(100 * time.Millisecond).String()
}

// leaseHolder is the reference's Lease holder; empty when there is none.
func leaseHolder(ctx context.Context, f *framework.Framework) string {
	ginkgo.GinkgoHelper()
	lease, err := f.ClientSet.CoordinationV1().Leases(leaseNamespace).Get(ctx, leaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

func createGang(ctx context.Context, f *framework.Framework, name string, replicas int32) apps.App {
	ginkgo.GinkgoHelper()
	d := builder.Deployment(name, f.Namespace).Replicas(replicas).Recreate().Request(corev1.ResourceCPU, "100m").Obj()
	created, err := framework.Intent.CreateDeployment(ctx, d, gang())
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating the gang Deployment %s", name)
	return apps.Deployment(created)
}

// identityOf reads the Lease identity an instance logged at start.
func identityOf(log string) (string, bool) {
	const key = `identity="`
	i := strings.Index(log, key)
	if i < 0 {
		return "", false
	}
	rest := log[i+len(key):]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return "", false
	}
	return rest[:j], true
}

// gang is the simplest scheduling intent: the whole Deployment as one gang
// (which the KEP allows with the Recreate strategy only).
func gang() *framework.DeploymentScheduling {
	return &framework.DeploymentScheduling{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{},
	}}
}
