package statefulset

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
)

// KEP-6277, OwnerReferences Relationship: "OwnerReference.UID must match the
// StatefulSet’s metadata.UID, so a recreated StatefulSet of the same name
// does not adopt the previous one’s objects." and "Objects it did not create
// are never adopted".
//
// A StatefulSet deleted with propagationPolicy Orphan leaves its Workload,
// PodGroup and pods behind, the garbage collector having removed their
// ownerReferences to it; a StatefulSet created under the same name is another
// object (another UID). What the new one's controller may do with the
// orphaned objects is not one thing in the KEP, and the spec accepts each
// reading it allows, recording which one it saw ("reading" in the report):
//
//   - Discovery is "by reference, not by name and not by ownership": the
//     orphaned Workload's spec.controllerRef (apps, StatefulSet, the name)
//     still identifies the new StatefulSet, and the orphaned PodGroup
//     references that Workload. They were not created for this UID, so they
//     are used as a Workload "created by another actor" is: "respects and uses
//     it, adds no ownerReference, never mutates it". New pods join the
//     orphaned PodGroup, which stays as it was.
//   - The orphaned objects are the previous StatefulSet's, so the new one
//     creates a Workload and a PodGroup of its own, named "for human
//     readability" only (another hash, or the same name and a conflict), each
//     with a controller ownerReference to the new UID; its new pods join that
//     PodGroup.
//   - It creates nothing it cannot (a name taken, or pods already exist:
//     "creates only what is missing", only while "the StatefulSet has no pods
//     associated with it yet") and says so with a Warning event.
//
// In no reading may the orphaned Workload or PodGroup get an ownerReference
// to the new UID, or be written at all (the scheduler's status writes to the
// PodGroup aside), and a new pod may not be left outside every PodGroup
// without a word: it would bypass the gang.
var _ = ginkgo.Describe("StatefulSet recreated under the same name", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("sts-reborn")

		ginkgo.DescribeTable("after an orphaning delete does not adopt the previous StatefulSet's Workload or PodGroup; what it creates references its own UID", framework.ID("S-I16"),
			func(ctx context.Context, sameTemplate bool) {
				old, oldApp, before := runningGang(ctx, f, "reborn", 2, "100m")
				w, pg := objectsOf(ctx, f, oldApp)
				gomega.Expect(oldApp.Controls(&w)).To(gomega.BeTrue(), "Workload %s is controlled by StatefulSet %s (UID %s): %v", w.Name, old.Name, old.UID, w.OwnerReferences)
				gomega.Expect(oldApp.Controls(&pg)).To(gomega.BeTrue(), "PodGroup %s is controlled by StatefulSet %s (UID %s): %v", pg.Name, old.Name, old.UID, pg.OwnerReferences)
				original := map[types.UID]bool{}
				for _, uid := range before.PodUIDs() {
					original[uid] = true
				}

				ginkgo.By("deleting StatefulSet " + old.Name + " with propagationPolicy Orphan")
				gomega.Expect(f.ClientSet.AppsV1().StatefulSets(f.Namespace).Delete(ctx, old.Name, metav1.DeleteOptions{
					PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)})).To(gomega.Succeed())
				orphanedW, orphanedPG := waitOrphaned(ctx, f, old, &w, &pg)

				spec := parallel(f, "reborn", 2, "100m")
				if !sameTemplate {
					spec = parallel(f, "reborn", 2, "150m")
				}
				ginkgo.By("recreating StatefulSet " + old.Name)
				set := create(ctx, spec.Obj(), gang())
				gomega.Expect(set.UID).NotTo(gomega.Equal(old.UID), "the recreated StatefulSet is another object")
				a := apps.StatefulSet(set)
				if sameTemplate {
					// The upstream StatefulSet controller adopts the orphaned
					// pods (same selector, same names): scaling to 3 makes the
					// new controller create one pod.
					apps.WaitForObserved(ctx, f, a)
					ginkgo.By("scaling the recreated StatefulSet to 3: its controller makes a third pod")
					apps.Scale(ctx, f, a, 3)
				} else {
					ginkgo.By("a new pod template: the recreated StatefulSet's controller rolls the adopted pods")
				}
				reaction := awaitReborn(ctx, f, a, original, orphanedW, orphanedPG)
				logf("the recreated StatefulSet reacted: %s", reaction)

				ginkgo.By("the orphaned Workload and PodGroup stay as they were; every new pod is in a PodGroup the KEP allows, controlled by the new UID")
				var reading string
				gomega.Consistently(ctx, func(ctx context.Context) (err error) {
					reading, err = checkReborn(ctx, f, set, orphanedW, orphanedPG, original, strings.HasPrefix(reaction, "warning"))
					return err
				}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.Succeed())
				logf("reading taken: %s; %s", reading, apps.Read(ctx, f, a))
				framework.RecordReading(reading)
			},
			ginkgo.Entry("with the same pod template, scaled up (the orphaned pods are adopted, a third one is made)", true),
			ginkgo.Entry("with a new pod template (the orphaned pods are adopted and rolled)", false),
		)
	})

// The readings of S-I16 (see above), as recorded in the report.
const (
	readingUsesOrphaned = "uses the orphaned Workload and PodGroup as found (discovered by spec.controllerRef), unchanged and not adopted"
	readingOwnObjects   = "creates a Workload and a PodGroup of its own, controlled by the new UID"
	readingWarns        = "creates no pod and no object, and raises a Warning event"
)

// waitOrphaned waits until StatefulSet old is gone and the garbage collector
// has removed every ownerReference to it from w, pg and its pods (the orphan
// finalizer's work), and returns w and pg as they are then.
func waitOrphaned(ctx context.Context, f *framework.Framework, old *appsv1.StatefulSet, w *schedulingv1beta1.Workload, pg *schedulingv1beta1.PodGroup) (*schedulingv1beta1.Workload, *schedulingv1beta1.PodGroup) {
	ginkgo.GinkgoHelper()
	var gotW *schedulingv1beta1.Workload
	var gotPG *schedulingv1beta1.PodGroup
	refersToOld := func(refs []metav1.OwnerReference) bool {
		return slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == old.UID })
	}
	gomega.Eventually(ctx, func(ctx context.Context) ([]string, error) {
		var left []string
		if _, err := f.ClientSet.AppsV1().StatefulSets(f.Namespace).Get(ctx, old.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			left = append(left, "statefulset/"+old.Name+" not gone")
		}
		var err error
		if gotW, err = f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).Get(ctx, w.Name, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("the Workload of the orphaning-deleted StatefulSet: %w", err)
		}
		if refersToOld(gotW.OwnerReferences) {
			left = append(left, "workload/"+w.Name+" owned by it")
		}
		if gotPG, err = f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).Get(ctx, pg.Name, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("the PodGroup of the orphaning-deleted StatefulSet: %w", err)
		}
		if refersToOld(gotPG.OwnerReferences) {
			left = append(left, "podgroup/"+pg.Name+" owned by it")
		}
		pods, err := framework.ListPods(ctx, apps.Pods(f, apps.StatefulSet(old)))
		for _, p := range pods {
			if refersToOld(p.OwnerReferences) {
				left = append(left, "pod/"+p.Name+" owned by it")
			}
		}
		return left, err
	}).WithTimeout(f.Timeouts.Cleanup).WithPolling(f.Timeouts.Poll).Should(gomega.BeEmpty(),
		"waiting for StatefulSet %s to be deleted and its Workload, PodGroup and pods orphaned", old.Name)
	gomega.Expect(gotW.UID).To(gomega.Equal(w.UID), "Workload %s was replaced", w.Name)
	gomega.Expect(gotPG.UID).To(gomega.Equal(pg.UID), "PodGroup %s was replaced", pg.Name)
	return gotW, gotPG
}

// awaitReborn waits until the recreated StatefulSet's controller has acted:
// a pod not among the original ones exists, or a Warning event about the new
// StatefulSet (its UID) says why it made none: a failed Workload creation
// (the name is taken) or one that names the orphaned objects.
func awaitReborn(ctx context.Context, f *framework.Framework, a apps.App, original map[types.UID]bool, w *schedulingv1beta1.Workload, pg *schedulingv1beta1.PodGroup) string {
	ginkgo.GinkgoHelper()
	warnings := []apps.Warning{
		{Why: "its Workload could not be created", Reason: "WorkloadCreationFailed"},
		{Why: "the orphaned objects are not its own", Names: []string{w.Name, pg.Name}},
	}
	var reaction string
	gomega.Eventually(ctx, func(ctx context.Context) (string, error) {
		pods, err := framework.ListPods(ctx, apps.Pods(f, a))
		if err != nil {
			return "", err
		}
		for _, p := range pods {
			if !original[p.UID] {
				reaction = "pod " + p.Name + " made"
				return reaction, nil
			}
		}
		events, err := apps.Events(ctx, f, a)
		for _, e := range events {
			if slices.ContainsFunc(warnings, func(w apps.Warning) bool { return w.Matches(e) }) {
				reaction = "warning " + e.Reason + ": " + e.Message
				return reaction, nil
			}
		}
		return "", err
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).ShouldNot(gomega.BeEmpty(),
		"waiting for the recreated %s to make a new pod, or to raise a Warning event saying why it does not", a)
	return reaction
}

// checkReborn returns the reading the recreated StatefulSet set took, or an
// error if the orphaned Workload w or PodGroup pg was written (an
// ownerReference to set's UID being the adoption the KEP forbids), an object
// other than them that names set is not controlled by its UID, or a new pod
// (not among original) is not controlled by set or is in no PodGroup a
// reading allows. warned: the controller raised a Warning event instead of
// making a pod.
func checkReborn(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet, w *schedulingv1beta1.Workload, pg *schedulingv1beta1.PodGroup,
	original map[types.UID]bool, warned bool) (string, error) {
	a := apps.StatefulSet(set)
	adopted := func(refs []metav1.OwnerReference) bool {
		return slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == set.UID })
	}
	sched := f.ClientSet.SchedulingV1beta1()
	nowW, err := sched.Workloads(f.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
	switch {
	case err != nil:
		return "", fmt.Errorf("the orphaned Workload %s: %w", w.Name, err)
	case adopted(nowW.OwnerReferences):
		return "", fmt.Errorf("the orphaned Workload %s was adopted by the recreated StatefulSet (UID %s): ownerReferences %v", w.Name, set.UID, nowW.OwnerReferences)
	case !reflect.DeepEqual(workloadKept(nowW), workloadKept(w)):
		return "", fmt.Errorf("the orphaned Workload %s was written: %+v, was %+v", w.Name, workloadKept(nowW), workloadKept(w))
	}
	nowPG, err := sched.PodGroups(f.Namespace).Get(ctx, pg.Name, metav1.GetOptions{})
	switch {
	case err != nil:
		return "", fmt.Errorf("the orphaned PodGroup %s: %w", pg.Name, err)
	case adopted(nowPG.OwnerReferences):
		return "", fmt.Errorf("the orphaned PodGroup %s was adopted by the recreated StatefulSet (UID %s): ownerReferences %v", pg.Name, set.UID, nowPG.OwnerReferences)
	case !reflect.DeepEqual(podGroupKept(nowPG), podGroupKept(pg)):
		return "", fmt.Errorf("the orphaned PodGroup %s was written: %+v, was %+v", pg.Name, podGroupKept(nowPG), podGroupKept(pg))
	}

	// What the recreated StatefulSet's controller created: every other
	// Workload that names it, and every other PodGroup of such a Workload
	// or controlled by a StatefulSet of its name, carries its UID.
	own := map[string]*schedulingv1beta1.Workload{}
	for _, other := range apps.WorkloadsReferencing(ctx, f, a.ControllerRef()) {
		if other.UID == w.UID {
			continue
		}
		if !a.Controls(&other) {
			return "", fmt.Errorf("Workload %s names StatefulSet %s but is not controlled by its UID %s: ownerReferences %v", other.Name, set.Name, set.UID, other.OwnerReferences)
		}
		own[other.Name] = &other
	}
	pgs := map[string]*schedulingv1beta1.PodGroup{}
	for _, other := range apps.ListPodGroups(ctx, f) {
		pgs[other.Name] = &other
		if other.UID == pg.UID {
			continue
		}
		ref, c := other.Spec.WorkloadRef, metav1.GetControllerOf(&other)
		names := (ref != nil && (own[ref.WorkloadName] != nil || ref.WorkloadName == w.Name)) || (c != nil && c.Kind == apps.KindStatefulSet && c.Name == set.Name)
		if names && !a.Controls(&other) {
			return "", fmt.Errorf("PodGroup %s belongs to StatefulSet %s but is not controlled by its UID %s: ownerReferences %v", other.Name, set.Name, set.UID, other.OwnerReferences)
		}
		for _, r := range other.OwnerReferences {
			if ow := own[r.Name]; r.Kind == "Workload" && ow != nil && r.UID != ow.UID {
				return "", fmt.Errorf("PodGroup %s's ownerReference to Workload %s has UID %s, not the Workload's %s", other.Name, r.Name, r.UID, ow.UID)
			}
		}
	}

	// The new pods: controlled by the new UID, each in the orphaned PodGroup
	// (unchanged, checked above) or in a PodGroup of a Workload of its own.
	pods, err := framework.ListPods(ctx, apps.Pods(f, a))
	if err != nil {
		return "", err
	}
	var readings []string
	for _, p := range pods {
		if original[p.UID] || p.DeletionTimestamp != nil {
			continue
		}
		if c := metav1.GetControllerOf(&p); c == nil || c.UID != set.UID {
			return "", fmt.Errorf("pod %s is not controlled by the recreated StatefulSet (UID %s): ownerReferences %v", p.Name, set.UID, p.OwnerReferences)
		}
		group := ""
		if sg := p.Spec.SchedulingGroup; sg != nil {
			group = ptr.Deref(sg.PodGroupName, "")
		}
		joined := pgs[group]
		var reading string
		switch {
		case group == "":
			return "", fmt.Errorf("pod %s of the recreated StatefulSet has no spec.schedulingGroup.podGroupName: it bypasses the gang", p.Name)
		case joined == nil:
			return "", fmt.Errorf("pod %s of the recreated StatefulSet names PodGroup %s, which does not exist", p.Name, group)
		case joined.UID == pg.UID:
			reading = readingUsesOrphaned
		case joined.Spec.WorkloadRef != nil && own[joined.Spec.WorkloadRef.WorkloadName] != nil && a.Controls(joined):
			reading = readingOwnObjects
		default:
			return "", fmt.Errorf("pod %s of the recreated StatefulSet joined PodGroup %s (workloadRef %+v, ownerReferences %v): neither the orphaned PodGroup %s nor one of a Workload of its own",
				p.Name, group, joined.Spec.WorkloadRef, joined.OwnerReferences, pg.Name)
		}
		if !slices.Contains(readings, reading) {
			readings = append(readings, reading)
		}
	}
	switch {
	case len(readings) > 0:
		slices.Sort(readings)
		return strings.Join(readings, "; "), nil
	case warned:
		return readingWarns, nil
	}
	return "", fmt.Errorf("the recreated StatefulSet has no new pod any more and raised no Warning event")
}
