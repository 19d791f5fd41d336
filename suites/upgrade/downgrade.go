package upgrade

import (
	"context"
	"fmt"
	"slices"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// The real downgrade: back to a Kubernetes without the KEPs, and up again.
// path.go flips the KEP gates on the implementation's two sides; here the
// versions change the way a user's cluster does when it goes back to a
// release without KEP-6276/6277: kube-controller-manager's own Deployment,
// ReplicaSet and StatefulSet controllers (no KEP hooks) take over the live
// objects while the implementation's controllers are stopped. "Upgrade" is
// the implementation back and the stock controllers off again.
//
// Rollout order, as path.go: on downgrade the controller side first (stop
// the implementation, then start the stock controllers: never both at once),
// the admission side last; on upgrade the reverse.
//
// The admission side. The reference webhook (was-webhook) is a validating
// webhook for apps/v1 Deployments, deployments/scale and StatefulSets only:
// it never sees a pod and mutates nothing, so it cannot put a scheduling
// group on a pod the stock controllers create, whatever its gates say. What
// it decides is whether a write of spec.scheduling is accepted. The KEPs'
// rollback of the apiserver side is the gate-off apiserver, which keeps what
// was stored: KEP-6277 "kube-apiserver: Clears spec.scheduling on new
// creates; preserves the stored value on existing objects (standard alpha
// field-gating)", and its re-enable assumes it ("resumes compilation for any
// StatefulSet whose stored spec.scheduling survived the rollback (the API
// server preserves already-set values even with the gate off)"); KEP-6276
// "With the gate disabled on kube-apiserver, new requests that set
// spec.scheduling are rejected". (An apiserver that did not know the field
// at all would drop it on the first write of the object, a case neither KEP
// describes: Kubernetes keeps a new field known to the previous release.)
// So the downgrade turns the admission side's gate off too, last, and the
// scale-up while downgraded is an update that keeps the stored intent, as
// path.go's is; the spec asserts the stored intent survives the downgrade.
//
// Not here: the stop proof of crash.go (expectStopped). The stock
// controllers answer every probe by design, and a still-running
// implementation shows anyway: it would group the pod made while downgraded,
// or raise the minCounts that KEP-6277 says stay put, which the downgraded
// window watches for longer than any retry.

// stockControllers turns kube-controller-manager's own apps controllers back
// on: its --controllers as kubeadm (and a cluster without an out-of-tree
// implementation) runs it. The harness's clusters run it with
// -deployment-controller,-replicaset-controller,-statefulset-controller.
var stockControllers = framework.ComponentChange{Component: localcluster.ControllerManager,
	ComponentConfig: localcluster.ComponentConfig{ExtraArgs: map[string]string{"controllers": "*,bootstrapsigner,tokencleaner"}}}

// claimEntry is the PodGroup-level claim entry of the downgrade's apps, in
// spec.scheduling.resourceClaims and in the pod template (same name, same
// template): KEP-5729's claim shared by the PodGroup's pods.
const claimEntry = "gpu"

// gangWithClaim creates a's gang app of small pods; with claim set, the
// gang shares a PodGroup-level claim generated from template claim.
func gangWithClaim(ctx context.Context, f *framework.Framework, a apps.App, replicas int32, claim string) {
	ginkgo.GinkgoHelper()
	var err error
	withClaim := func(p *builder.PodWrapper) {
		if claim != "" {
			p.ResourceClaim(claimEntry, "", claim)
		}
	}
	var claims []schedulingv1alpha3.WorkloadPodGroupResourceClaim
	if claim != "" {
		claims = []schedulingv1alpha3.WorkloadPodGroupResourceClaim{{Name: claimEntry, ResourceClaimTemplateName: ptr.To(claim)}}
	}
	if a.Kind == apps.KindDeployment {
		cfg := gangDeployment()
		cfg.ResourceClaims = claims
		d := builder.Deployment(a.Name, f.Namespace).Replicas(replicas).Recreate().Request(corev1.ResourceCPU, "100m").PodTemplate(withClaim).Obj()
		_, err = framework.Intent.CreateDeployment(ctx, d, cfg)
	} else {
		cfg := gangStatefulSet()
		cfg.ResourceClaims = claims
		s := builder.StatefulSet(a.Name, f.Namespace).Replicas(replicas).Parallel().Request(corev1.ResourceCPU, "100m").PodTemplate(withClaim).Obj()
		_, err = framework.Intent.CreateStatefulSet(ctx, s, cfg)
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating %s", a)
}

// storedGang reads whether a's stored spec.scheduling is still a gang.
func storedGang(ctx context.Context, f *framework.Framework, a apps.App) (bool, error) {
	if a.Kind == apps.KindDeployment {
		cfg, err := framework.Intent.DeploymentScheduling(ctx, f.Namespace, a.Name)
		return cfg.IsGang(), err
	}
	cfg, err := framework.Intent.StatefulSetScheduling(ctx, f.Namespace, a.Name)
	return cfg.IsGang(), err
}

// podsKept: every pod of before is still there, same UID (a transform for
// the downgraded window: missing pod names, empty when none is).
func podsKept(before apps.State) func(apps.State) []string {
	return func(now apps.State) []string {
		uids := now.PodUIDs()
		var missing []string
		for _, p := range before.Pods {
			if uids[p.Name] != p.UID {
				missing = append(missing, fmt.Sprintf("%s (uid %s)", p.Name, p.UID))
			}
		}
		return missing
	}
}

func objectUIDs(s apps.State) []types.UID {
	var out []types.UID
	for _, o := range append(slices.Clone(s.Workloads), s.PodGroups...) {
		out = append(out, o.UID)
	}
	slices.Sort(out)
	return out
}

// sharedClaim is the gang's PodGroup-level claim, checked at each step.
type sharedClaim struct {
	f     *framework.Framework
	app   apps.App
	claim *resourcev1.ResourceClaim // as first allocated
}

// expectShared asserts the claim is the same object, still allocated and
// reserved for the PodGroup pg, and that the pods named group resolve their
// claim entry to it (and run where its device is).
func (c *sharedClaim) expectShared(ctx context.Context, s apps.State, what string) {
	ginkgo.GinkgoHelper()
	pg, err := c.f.ClientSet.SchedulingV1beta1().PodGroups(c.f.Namespace).Get(ctx, s.PodGroups[0].Name, metav1.GetOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	now, err := c.f.ClientSet.ResourceV1().ResourceClaims(c.f.Namespace).Get(ctx, c.claim.Name, metav1.GetOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "%s: the PodGroup's claim %s is gone", what, c.claim.Name)
	gomega.Expect(now.UID).To(gomega.Equal(c.claim.UID), "%s: the PodGroup's claim was recreated", what)
	gomega.Expect(now.DeletionTimestamp).To(gomega.BeNil(), "%s: the PodGroup's claim %s is being deleted (held by its finalizers %v)", what, now.Name, now.Finalizers)
	gomega.Expect(framework.ReservedOnlyFor(now, framework.PodGroupConsumer(pg))).To(gomega.BeTrue(),
		"%s: the claim stays allocated and reserved for PodGroup %s: %s", what, pg.Name, framework.StateOf(now))
	gomega.Expect(now.Status.Allocation.Devices).To(gomega.Equal(c.claim.Status.Allocation.Devices), "%s: the claim kept its device", what)
	pods, err := framework.ListPods(ctx, apps.Pods(c.f, c.app))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	var grouped []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Spec.SchedulingGroup != nil {
			grouped = append(grouped, p)
		}
	}
	gomega.Expect(grouped).To(gomega.HaveLen(s.Grouped()), "%s: grouped pods", what)
	framework.ExpectPodsShareClaim(grouped, claimEntry, now)
}

// expectOwnClaim asserts pod name has a claim of its own, not the gang's:
// KEP-6276's mixed-pod caveat, "DRA ResourceClaims: pods without
// schedulingGroup do not reference the PodGroup's shared claim and fall back
// to per-pod allocation."
func (c *sharedClaim) expectOwnClaim(ctx context.Context, name string) {
	ginkgo.GinkgoHelper()
	var p *corev1.Pod
	var own *resourcev1.ResourceClaim
	gomega.Eventually(ctx, func(ctx context.Context) (string, error) {
		var err error
		if p, err = c.f.ClientSet.CoreV1().Pods(c.f.Namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return "", err
		}
		claim := framework.PodClaimName(p, claimEntry)
		if claim == "" {
			return fmt.Sprintf("pod %s: entry %q unresolved (status.resourceClaimStatuses %v)", name, claimEntry, p.Status.ResourceClaimStatuses), nil
		}
		if own, err = c.f.ClientSet.ResourceV1().ResourceClaims(c.f.Namespace).Get(ctx, claim, metav1.GetOptions{}); err != nil {
			return "", err
		}
		if !framework.ReservedOnlyFor(own, framework.PodConsumer(p)) {
			return framework.StateOf(own).String(), nil
		}
		return "reserved for the pod", nil
	}).WithTimeout(c.f.Timeouts.PodsBound).WithPolling(c.f.Timeouts.Poll).Should(gomega.Equal("reserved for the pod"),
		"waiting for pod %s, made while downgraded, to have a claim of its own allocated and reserved for it", name)
	gomega.Expect(own.UID).NotTo(gomega.Equal(c.claim.UID), "pod %s, which names no PodGroup, uses the PodGroup's claim", name)
	gomega.Expect(metav1.IsControlledBy(own, p)).To(gomega.BeTrue(), "claim %s is generated for pod %s: %v", own.Name, name, own.OwnerReferences)
}

// walkDowngrade is the whole path for s's kind.
func walkDowngrade(ctx context.Context, f *framework.Framework, s pathSubject, skewed bool) {
	kind := apps.KindDeployment
	if s.gate == framework.WorkloadWithStatefulSet {
		kind = apps.KindStatefulSet
	}
	stock, version := downgradeTo(skewed)
	admissionOff := framework.GateOn(s.gate, false, framework.ReferenceWebhook)
	framework.RequireReconfigure(append([]framework.ComponentChange{stock}, admissionOff...)...)
	framework.RequireImplementationControllersStop()
	dups := framework.WatchForDuplicates(ctx, f.ClientSet, f.Namespace)
	history := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource)

	gang := apps.App{Kind: kind, Name: "gang"}
	var claim *sharedClaim
	missing := framework.MissingDevices(ctx, f.ClientSet)
	if skewed && missing == "" {
		// The previous minor's ResourceClaim controller predates
		// PodGroup-level claims: measured with v1.36.3, it generated a claim
		// of its own for each running gang pod and pointed the pods'
		// status.resourceClaimStatuses at it, away from the PodGroup's claim.
		// The KEPs leave that to KEP-5729 (KEP-6277: "See KEP-5729 for
		// detailed downgrade behavior of PodGroup-level ResourceClaims"), which
		// this suite does not test, so this entry runs without claims.
		missing = skewedClaimsGap
	}
	if missing != "" {
		ginkgo.By("without PodGroup-level claims: " + missing)
		gangWithClaim(ctx, f, gang, 3, "")
	} else {
		framework.CreateResourceClaimTemplate(ctx, f, "gpu", 1)
		gangWithClaim(ctx, f, gang, 3, "gpu")
	}
	before := apps.WaitForGang(ctx, f, gang, 3, 3)
	if missing == "" {
		c := framework.WaitForPodGroupClaim(ctx, framework.PodGroupClaimInput{ClientSet: f.ClientSet, Namespace: f.Namespace,
			PodGroup: before.PodGroups[0].Name, Entry: claimEntry})
		claim = &sharedClaim{f: f, app: gang, claim: c}
		claim.expectShared(ctx, before, "upgraded, before the downgrade")
	}

	ginkgo.By("downgrade to a Kubernetes without the KEP: the implementation's controllers stop, then kube-controller-manager's own apps controllers start, then the admission side's gate goes off")
	startImplementation := framework.StopImplementationControllers(ctx)
	stopStock := framework.Reconfigure(ctx, framework.ReconfigureInput{Changes: []framework.ComponentChange{stock}})
	if version != "" {
		expectComponentVersion(ctx, f, localcluster.ControllerManager, version)
	}
	admissionOn := framework.Reconfigure(ctx, framework.ReconfigureInput{Changes: admissionOff})

	// KEP-6276: "Disabling the gate after scheduling-enabled Deployments
	// already exist does not remove their stored Workload, PodGroup, or pod
	// references. [...] Existing pods retain the scheduling-group reference
	// they were created with." KEP-6277: "On downgrade: Existing Workload and
	// PodGroup objects remain in the cluster [...] ResourceClaims [...] If
	// the PodGroup persists after downgrade (as described above), its
	// ResourceClaims also persist."
	ginkgo.By("downgraded: the Workload, the PodGroup, its claim and the running pods are the same objects")
	downgraded := apps.Read(ctx, f, gang)
	gomega.Expect(downgraded).To(apps.Gang(3, 3), "downgraded: %s", downgraded)
	apps.ExpectSameObjects(downgraded, before)
	apps.ExpectPodsUndisturbed(downgraded, before)
	if claim != nil {
		claim.expectShared(ctx, downgraded, "downgraded")
	}

	// KEP-6277: "Pods created after downgrade will not carry the field, so a
	// StatefulSet can end up with a mix of pods inside and outside its
	// PodGroup"; "New pods created after rollback lack schedulingGroup and
	// schedule individually". KEP-6276 (Version Skew): "Pods created without
	// schedulingGroup schedule normally through the default path." The stock
	// controllers do the scale: nothing else runs an apps controller now.
	ginkgo.By("downgraded: a scale-up to 4 is done by the stock controllers; the new pod names no PodGroup and runs")
	apps.Scale(ctx, f, gang, 4)
	mixed := apps.WaitForState(ctx, f, gang, "3 grouped pods and 1 ungrouped, all Running, objects at minCount 3", gomega.SatisfyAll(
		apps.Mixed(4, 1), apps.AtMinCount(3), gomega.WithTransform(apps.State.Running, gomega.Equal(4))))
	apps.ExpectSameObjects(mixed, before)
	apps.ExpectPodsUndisturbed(mixed, before)
	made := mixed.Ungrouped()[0].Name
	if claim != nil {
		claim.expectOwnClaim(ctx, made)
		claim.expectShared(ctx, mixed, "downgraded, after the scale-up")
	}
	stored, err := storedGang(ctx, f, gang)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(stored).To(gomega.BeTrue(), "the stored spec.scheduling of %s survives the downgrade (KEP-6277: \"preserves the stored value on existing objects\")", gang)

	// KEP-6277: "kube-controller-manager: Stops compiling Workload and
	// PodGroup objects for StatefulSets. It neither deletes nor updates the
	// ones it already created"; "Scaling a gang-scheduled StatefulSet from 3
	// to 5 leaves both at minCount: 3"; "Running pods are never terminated by
	// any of this". KEP-6276: "the controllers stop reconciling scheduling
	// objects. Existing PodGroups remain until their owning ReplicaSet is
	// garbage-collected. The Workload remains until the Deployment is
	// deleted." Watched for longer than any retry of a controller that should
	// not be running.
	ginkgo.By("downgraded: nothing touches the objects or the pods")
	apps.KeepsState(ctx, f, gang, "the same Workload and PodGroup at minCount 3, the same 4 pods, 1 of them ungrouped", gomega.SatisfyAll(
		apps.Mixed(4, 1), apps.AtMinCount(3),
		gomega.WithTransform(objectUIDs, gomega.Equal(objectUIDs(before))),
		gomega.WithTransform(podsKept(mixed), gomega.BeEmpty())))

	ginkgo.By("upgrade: the admission side's gate on, then the stock apps controllers off, then the implementation's controllers started")
	admissionOn(ctx)
	stopStock(ctx)
	startImplementation(ctx)

	// KEP-6276: "Deployments with a stored spec.scheduling value resume
	// reconciliation on their next sync. Existing Workload/PodGroup objects
	// are discovered via deterministic naming and reused." KEP-6277: "If the
	// Workload and PodGroup still exist [...], the controller discovers them
	// by reference [...] and reuses them"; its tests: "Gate toggled off then
	// on: existing scheduling objects discovered and reused; no duplicates."
	// The mixed pod stays: KEP-6276 "Recovery requires administrator action:
	// delete the inconsistent pods", KEP-6277 "Running pods are never
	// terminated by any of this".
	ginkgo.By("upgraded again: the same objects, re-synced to minCount 4, no duplicate; every pod untouched, the ungrouped one included")
	after := apps.WaitForState(ctx, f, gang, "minCount 4", apps.AtMinCount(4))
	apps.ExpectSameObjects(after, before)
	apps.ExpectPodsUndisturbed(after, mixed)
	gomega.Expect(after.Ungrouped()).To(gomega.ConsistOf(gomega.HaveField("Name", made)), "the pod made while downgraded is still the one without a PodGroup: %s", after)
	if claim != nil {
		claim.expectShared(ctx, after, "upgraded again")
	}
	dups.ExpectNone()

	// KEP-6276: "The gang quorum may be unsatisfiable until the inconsistent
	// pods are deleted and recreated."
	ginkgo.By("recovery as the KEPs describe it: deleting the pod made while downgraded; its replacement joins the group")
	deleteUngrouped(ctx, f, after)
	recovered := apps.WaitForGang(ctx, f, gang, 4, 4)
	apps.ExpectSameObjects(recovered, before)
	apps.ExpectPodsUndisturbed(recovered, before)
	if claim != nil {
		claim.expectShared(ctx, recovered, "recovered")
	}
	dups.ExpectNone()
	expectCreations(history, 1, 1)
}

// skewedClaimsGap is why a downgrade to the previous minor runs without a
// PodGroup-level claim.
const skewedClaimsGap = "the previous minor's kube-controller-manager predates PodGroup-level claims (KEP-5729's downgrade, not these KEPs')"

// downgradeTo is the kube-controller-manager the cluster goes back to: this
// release's binary with its own apps controllers on, or (skewed) the
// previous minor's, the release before the KEPs, against this apiserver. The
// older binary gets its own defaults for the Workload-Aware Scheduling gates
// (it refuses the 1.37 ones), as skew.go's S-P8 scheduler does. It skips,
// with the build command, where the older binary is missing.
func downgradeTo(skewed bool) (change framework.ComponentChange, version string) {
	ginkgo.GinkgoHelper()
	change = stockControllers
	if !skewed {
		return change, ""
	}
	version = framework.TestContext.SkewKubeVersion
	change.ComponentConfig = change.DeepCopy()
	// A version, not a binary: the local cluster runs its binary of that
	// version (skipping, with the build command, where it is missing), a
	// kubeadm hook the preloaded image of that tag (hack/hooks/kubeadm).
	change.Version = version
	change.OmitFeatureGates = workloadGates
	framework.RequireReconfigure(change)
	return change, version
}

var _ = ginkgo.Describe("Downgrade to a Kubernetes without the KEP, and upgrade again", framework.Serial, framework.Disruptive,
	framework.WithFeatureGate(framework.GenericWorkload), func() {
		f := framework.New("downgrade")

		ginkgo.DescribeTable("keeps a live gang Deployment, its objects and claim while kube-controller-manager's own controllers run it, and recovers them on upgrade",
			framework.ID("D-P4"), framework.KEP(6276), framework.WithFeatureGate(framework.WorkloadWithDeployment),
			func(ctx context.Context, skewed bool) { walkDowngrade(ctx, f, deploymentSubject, skewed) },
			ginkgo.Entry("this release's kube-controller-manager", false),
			ginkgo.Entry("real skew: the previous minor's kube-controller-manager against this apiserver", true))

		ginkgo.DescribeTable("keeps a live gang StatefulSet, its objects and claim while kube-controller-manager's own controllers run it, and recovers them on upgrade",
			framework.ID("S-P6"), framework.KEP(6277), framework.WithFeatureGate(framework.WorkloadWithStatefulSet),
			func(ctx context.Context, skewed bool) { walkDowngrade(ctx, f, statefulSetSubject, skewed) },
			ginkgo.Entry("this release's kube-controller-manager", false),
			ginkgo.Entry("real skew: the previous minor's kube-controller-manager against this apiserver", true))
	})
