package upgrade

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// KEP-6277's Upgrade / Downgrade Strategy on what a gang StatefulSet keeps
// besides its scheduling objects: "PVCs are unaffected: volumeClaimTemplates-
// managed PVCs are independent of the scheduling objects and are retained
// per the StatefulSet's persistentVolumeClaimRetentionPolicy", and "If the
// PodGroup persists after downgrade [...], its ResourceClaims also persist.
// [...] already-allocated claims remain functional for running pods."
//
// The downgrade is each of those the suite knows: the StatefulSet side's
// gate turned off (path.go's rollGate: the implementation keeps running as a
// plain StatefulSet controller), or kube-controller-manager's own StatefulSet
// controller in place of the implementation (downgrade.go), this release's
// or the previous minor's (without the claim there, as downgrade.go). While downgraded
// the gang is scaled down by one: whichever controller runs then deletes the
// pod, and the StatefulSet's retention policy (Retain, the default) must be
// all that decides the removed ordinal's PVC. The upgrade back scales up
// again, so the returning ordinal's pod shows the same PVC is reused.

// volumeTemplate is the StatefulSet's volumeClaimTemplate: PVC
// data-<set>-<ordinal>.
const volumeTemplate = "data"

// volumeClaims names the PVCs of ordinals 0..replicas-1 of set.
func volumeClaims(set string, replicas int) []string {
	var out []string
	for i := range replicas {
		out = append(out, fmt.Sprintf("%s-%s-%d", volumeTemplate, set, i))
	}
	return out
}

// downgrade is one way down and back up. stock: kube-controller-manager's
// own controllers, as walkDowngrade (skewed: the previous minor's binary, the
// release before the KEP); otherwise the StatefulSet gate off on both sides,
// as walkPath.
type downgrade struct {
	stock, skewed bool
	// change and version: the stock kube-controller-manager, set by require.
	change  framework.ComponentChange
	version string
}

// require skips, with the reason, where the cluster cannot make the change;
// call it before anything is created.
func (d *downgrade) require() {
	ginkgo.GinkgoHelper()
	if !d.stock {
		framework.RequireReconfigure(framework.GateOn(framework.WorkloadWithStatefulSet, false,
			framework.ReferenceControllerManager, framework.ReferenceWebhook)...)
		return
	}
	d.change, d.version = downgradeTo(d.skewed)
	framework.RequireReconfigure(append([]framework.ComponentChange{d.change},
		framework.GateOn(framework.WorkloadWithStatefulSet, false, framework.ReferenceWebhook)...)...)
	framework.RequireImplementationControllersStop()
}

// run turns the downgrade on and returns the upgrade back.
func (d *downgrade) run(ctx context.Context, f *framework.Framework) (upgrade func(context.Context)) {
	ginkgo.GinkgoHelper()
	gate := framework.WorkloadWithStatefulSet
	if !d.stock {
		rollGate(ctx, gate, false, true)
		return func(ctx context.Context) { rollGate(ctx, gate, true, false) }
	}
	ginkgo.By("downgrade: the implementation's controllers stop, kube-controller-manager's own apps controllers start, the admission side's gate goes off")
	startImplementation := framework.StopImplementationControllers(ctx)
	stopStock := framework.Reconfigure(ctx, framework.ReconfigureInput{Changes: []framework.ComponentChange{d.change}})
	if d.version != "" {
		expectComponentVersion(ctx, f, localcluster.ControllerManager, d.version)
	}
	admissionOn := framework.Reconfigure(ctx, framework.ReconfigureInput{Changes: framework.GateOn(gate, false, framework.ReferenceWebhook)})
	return func(ctx context.Context) {
		ginkgo.By("upgrade: the admission side's gate on, the stock apps controllers off, the implementation's controllers started")
		admissionOn(ctx)
		stopStock(ctx)
		startImplementation(ctx)
	}
}

// createVolumeGang creates a Parallel gang StatefulSet of replicas small pods
// with a volumeClaimTemplate and, with claim set, the PodGroup-level claim
// entry claimEntry generated from template claim.
func createVolumeGang(ctx context.Context, f *framework.Framework, name string, replicas int32, claim string) {
	ginkgo.GinkgoHelper()
	cfg := gangStatefulSet()
	s := builder.StatefulSet(name, f.Namespace).Replicas(replicas).Parallel().Request(corev1.ResourceCPU, "100m").
		VolumeClaimTemplate(volumeTemplate, "1Mi")
	if claim != "" {
		cfg.ResourceClaims = []schedulingv1alpha3.WorkloadPodGroupResourceClaim{{Name: claimEntry, ResourceClaimTemplateName: ptr.To(claim)}}
		s = s.PodTemplate(func(p *builder.PodWrapper) { p.ResourceClaim(claimEntry, "", claim) })
	}
	_, err := framework.Intent.CreateStatefulSet(ctx, s.Obj(), cfg)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating StatefulSet %s", name)
}

// volumesKept is a transform for a wait or a watched window: why the PVCs
// are not the bound ones of before (same UIDs, same volumes), "" when they are.
func volumesKept(ctx context.Context, f *framework.Framework, before []framework.BoundClaim) func(apps.State) (string, error) {
	names := make([]string, len(before))
	for i, c := range before {
		names[i] = c.Name
	}
	return func(apps.State) (string, error) {
		now, why, err := framework.ReadBoundClaims(ctx, f, names...)
		if why != "" || err != nil {
			return why, err
		}
		for i := range before {
			if now[i] != before[i] {
				return fmt.Sprintf("PVC %s was %s, now %s", before[i].Name, before[i], now[i]), nil
			}
		}
		return "", nil
	}
}

// expectPodsUseVolumes asserts each live pod of s mounts its own ordinal's
// PVC, and that the PVC is the bound one recorded.
func expectPodsUseVolumes(ctx context.Context, f *framework.Framework, s apps.State, set string, bound []framework.BoundClaim, what string) {
	ginkgo.GinkgoHelper()
	pods, err := framework.ListPods(ctx, apps.Pods(f, apps.App{Kind: apps.KindStatefulSet, Name: set}))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	byName := map[string]framework.BoundClaim{}
	for _, c := range bound {
		byName[c.Name] = c
	}
	live := 0
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		live++
		want := volumeTemplate + "-" + p.Name
		gomega.Expect(framework.PodClaimNames(&p)).To(gomega.HaveKeyWithValue(volumeTemplate, want), "%s: pod %s mounts its ordinal's PVC", what, p.Name)
		gomega.Expect(byName).To(gomega.HaveKey(want), "%s: pod %s's PVC %s is not one recorded bound", what, p.Name, want)
	}
	gomega.Expect(live).To(gomega.Equal(len(s.Pods)), "%s: live pods", what)
	gomega.Expect(volumesKept(ctx, f, bound)(s)).To(gomega.BeEmpty(), "%s: the PVCs", what)
}

// walkVolumes is S-P12's whole path through downgrade d.
func walkVolumes(ctx context.Context, f *framework.Framework, d downgrade) {
	d.require()
	dups := framework.WatchForDuplicates(ctx, f.ClientSet, f.Namespace)
	history := framework.RecordWrites(ctx, f.Namespace, framework.WorkloadsResource, framework.PodGroupsResource,
		framework.PVCsResource, framework.ResourceClaimsResource)

	const name = "vols"
	set := apps.App{Kind: apps.KindStatefulSet, Name: name}
	claims := volumeClaims(name, 3)
	framework.CreateStaticVolumes(ctx, f, "1Mi", claims...)
	var claim *sharedClaim
	missing := framework.MissingDevices(ctx, f.ClientSet)
	if d.skewed && missing == "" {
		// As walkDowngrade's skewed entry: the previous minor's
		// ResourceClaim controller predates PodGroup-level claims, and
		// KEP-6277 leaves that downgrade to KEP-5729.
		missing = skewedClaimsGap
	}
	if missing != "" {
		ginkgo.By("without a PodGroup-level claim, the PVCs only: " + missing)
		createVolumeGang(ctx, f, name, 3, "")
	} else {
		framework.CreateResourceClaimTemplate(ctx, f, "gpu", 1)
		createVolumeGang(ctx, f, name, 3, "gpu")
	}
	before := apps.WaitForGang(ctx, f, set, 3, 3)
	bound := framework.WaitForBoundClaims(ctx, f, claims...)
	expectPodsUseVolumes(ctx, f, before, name, bound, "upgraded, before the downgrade")
	if missing == "" {
		c := framework.WaitForPodGroupClaim(ctx, framework.PodGroupClaimInput{ClientSet: f.ClientSet, Namespace: f.Namespace,
			PodGroup: before.PodGroups[0].Name, Entry: claimEntry})
		claim = &sharedClaim{f: f, app: set, claim: c}
		claim.expectShared(ctx, before, "upgraded, before the downgrade")
	}

	upgrade := d.run(ctx, f)

	ginkgo.By("downgraded: the PVCs, the PodGroup and its claim are the same objects, bound and allocated, used by the same running pods")
	downgraded := apps.Read(ctx, f, set)
	gomega.Expect(downgraded).To(apps.Gang(3, 3), "downgraded: %s", downgraded)
	apps.ExpectSameObjects(downgraded, before)
	apps.ExpectPodsUndisturbed(downgraded, before)
	expectPodsUseVolumes(ctx, f, downgraded, name, bound, "downgraded")
	if claim != nil {
		claim.expectShared(ctx, downgraded, "downgraded")
	}

	// The retention policy is Retain (the API's default, left unset here):
	// whichever StatefulSet controller runs deletes the pod of ordinal 2 and
	// keeps its PVC. KEP-6277: the PodGroup's minCount stays at 3 while
	// downgraded ("Scaling a gang-scheduled StatefulSet from 3 to 5 leaves
	// both at minCount: 3"), so the objects are not touched either.
	ginkgo.By("downgraded: a scale-down to 2 removes pod " + name + "-2 and keeps its PVC " + claims[2])
	apps.Scale(ctx, f, set, 2)
	scaled := apps.WaitForState(ctx, f, set, "2 grouped pods, objects at minCount 3", gomega.SatisfyAll(
		apps.Mixed(2, 0), apps.AtMinCount(3), gomega.HaveField("Terminating", gomega.BeEmpty())))
	apps.ExpectSameObjects(scaled, before)
	apps.ExpectPodsUndisturbed(scaled, before.WithPods(name+"-0", name+"-1"))
	ginkgo.By("downgraded: nothing deletes or rebinds a PVC, the PodGroup or its claim")
	apps.KeepsState(ctx, f, set, "the same PodGroup at minCount 3, pods 0 and 1, every PVC bound as before", gomega.SatisfyAll(
		apps.Mixed(2, 0), apps.AtMinCount(3),
		gomega.WithTransform(objectUIDs, gomega.Equal(objectUIDs(before))),
		gomega.WithTransform(volumesKept(ctx, f, bound), gomega.BeEmpty())))
	expectPodsUseVolumes(ctx, f, scaled, name, bound, "downgraded, after the scale-down")
	if claim != nil {
		claim.expectShared(ctx, scaled, "downgraded, after the scale-down")
	}

	upgrade(ctx)

	// KEP-6277: "If the Workload and PodGroup still exist [...], the
	// controller discovers them by reference [...] and reuses them"; the
	// returning ordinal's pod gets the PVC that was retained for it.
	ginkgo.By("upgraded again: the same PodGroup re-synced to minCount 2; a scale-up to 3 brings " + name + "-2 back on its retained PVC and the same claim")
	after := apps.WaitForState(ctx, f, set, "minCount 2", gomega.SatisfyAll(apps.AtMinCount(2), apps.Mixed(2, 0)))
	apps.ExpectSameObjects(after, before)
	apps.ExpectPodsUndisturbed(after, scaled)
	apps.Scale(ctx, f, set, 3)
	recovered := apps.WaitForGang(ctx, f, set, 3, 3)
	apps.ExpectSameObjects(recovered, before)
	apps.ExpectPodsUndisturbed(recovered, scaled)
	expectPodsUseVolumes(ctx, f, recovered, name, bound, "upgraded again")
	if claim != nil {
		claim.expectShared(ctx, recovered, "upgraded again")
	}
	dups.ExpectNone()

	// Counted from the watch, so a PVC or claim deleted and recreated in
	// between (same name, new UID, or a deletion the finalizers held) shows.
	expectCreations(history, 1, 1)
	gomega.Expect(history.Creations("persistentvolumeclaims")).To(gomega.HaveLen(len(claims)), "PVC creations: %s", history)
	gomega.Expect(history.Deletions("persistentvolumeclaims")).To(gomega.BeEmpty(), "PVC deletions: %s", history)
	gomega.Expect(terminating(history, "persistentvolumeclaims")).To(gomega.BeEmpty(), "PVCs marked for deletion: %s", history)
	if claim != nil {
		gomega.Expect(history.Creations("resourceclaims")).To(gomega.HaveLen(1), "ResourceClaim creations (only the PodGroup's): %s", history)
		gomega.Expect(history.Deletions("resourceclaims")).To(gomega.BeEmpty(), "ResourceClaim deletions: %s", history)
		gomega.Expect(terminating(history, "resourceclaims")).To(gomega.BeEmpty(), "ResourceClaims marked for deletion: %s", history)
	}
}

// terminating lists the recorded writes of resource that set a
// deletionTimestamp: a deletion a finalizer still holds.
func terminating(h *framework.WriteHistory, resource string) []framework.Change {
	var out []framework.Change
	for _, c := range h.Sorted() {
		if c.Resource == resource && c.Terminating {
			out = append(out, c)
		}
	}
	return out
}

var _ = ginkgo.Describe("Downgrade keeps a gang StatefulSet's PVCs and PodGroup-level claim", framework.Serial, framework.Disruptive,
	framework.WithFeatureGate(framework.GenericWorkload), func() {
		f := framework.New("downgrade-volumes")

		ginkgo.DescribeTable("keeps the PVCs (retained on a scale-down) and the PodGroup's claim of a live gang StatefulSet through a downgrade, and reuses them on upgrade",
			framework.ID("S-P12"), framework.KEP(6277), framework.WithFeatureGate(framework.WorkloadWithStatefulSet),
			func(ctx context.Context, d downgrade) { walkVolumes(ctx, f, d) },
			ginkgo.Entry("the StatefulSet side's gate off", downgrade{}),
			ginkgo.Entry("kube-controller-manager's own StatefulSet controller", downgrade{stock: true}),
			ginkgo.Entry("real skew: the previous minor's kube-controller-manager against this apiserver", downgrade{stock: true, skewed: true}))
	})
