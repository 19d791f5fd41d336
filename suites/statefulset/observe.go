package statefulset

import (
	"context"
	"fmt"
	"slices"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
	"github.com/workload-aware/apps-harness/framework/builder"
)

// What the KEP says the controller must leave alone, checked from the API.

// userWorkload is a Workload a user, not the StatefulSet controller, creates
// for StatefulSet setName: spec.controllerRef names it (that is how it is
// discovered), one template of gang minCount, no ownerReference and no
// managed-by annotation.
func userWorkload(f *framework.Framework, name, setName, template string, minCount int32) *schedulingv1beta1.Workload {
	return builder.Workload(name, f.Namespace).ControllerRef(appsv1.GroupName, "StatefulSet", setName).
		PodGroupTemplate(builder.PodGroupTemplate(template).Gang(minCount)).Obj()
}

// createWorkload creates w and fails the spec on error.
func createWorkload(ctx context.Context, f *framework.Framework, w *schedulingv1beta1.Workload) *schedulingv1beta1.Workload {
	ginkgo.GinkgoHelper()
	created, err := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).Create(ctx, w, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating Workload %s", w.Name)
	return created
}

// createPodGroup creates pg and fails the spec on error.
func createPodGroup(ctx context.Context, f *framework.Framework, pg *schedulingv1beta1.PodGroup) *schedulingv1beta1.PodGroup {
	ginkgo.GinkgoHelper()
	created, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).Create(ctx, pg, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "creating PodGroup %s", pg.Name)
	return created
}

// kept is what must stay the same of an object the controller may not
// write: identity, ownership, annotations, labels, finalizers and spec.
type kept struct {
	UID                 types.UID
	Generation          int64
	OwnerReferences     []metav1.OwnerReference
	Annotations, Labels map[string]string
	Finalizers          []string
	Spec                any
	ResourceVersion     string
}

// expectWorkloadUntouched asserts nobody wrote was since it was read. A
// Workload has no status, so its resourceVersion must not have moved either.
func expectWorkloadUntouched(ctx context.Context, f *framework.Framework, was *schedulingv1beta1.Workload) {
	ginkgo.GinkgoHelper()
	now, err := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).Get(ctx, was.Name, metav1.GetOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "Workload %s is gone", was.Name)
	gomega.Expect(workloadKept(now)).To(gomega.Equal(workloadKept(was)), "Workload %s was written", was.Name)
}

// workloadKept is what of w nobody may write, its resourceVersion included
// (a Workload has no status).
func workloadKept(w *schedulingv1beta1.Workload) kept {
	return kept{w.UID, w.Generation, w.OwnerReferences, w.Annotations, w.Labels, w.Finalizers, w.Spec, w.ResourceVersion}
}

// podGroupKept is what of pg nobody but the scheduler may write: all but its
// status, so not its resourceVersion.
func podGroupKept(pg *schedulingv1beta1.PodGroup) kept {
	return kept{pg.UID, pg.Generation, pg.OwnerReferences, pg.Annotations, pg.Labels, pg.Finalizers, pg.Spec, ""}
}

// expectPodGroupUntouched asserts nobody but the scheduler wrote was since it
// was read. Its resourceVersion is not compared: the scheduler writes the
// PodGroup's status.
func expectPodGroupUntouched(ctx context.Context, f *framework.Framework, was *schedulingv1beta1.PodGroup) {
	ginkgo.GinkgoHelper()
	now, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).Get(ctx, was.Name, metav1.GetOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "PodGroup %s is gone", was.Name)
	gomega.Expect(podGroupKept(now)).To(gomega.Equal(podGroupKept(was)), "PodGroup %s was written", was.Name)
}

// storedIntent reads set's stored spec.scheduling through the intent seam
// (which has no read for StatefulSets: an update that changes nothing is a
// no-op for the apiserver).
func storedIntent(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet) *framework.StatefulSetScheduling {
	ginkgo.GinkgoHelper()
	var stored *framework.StatefulSetScheduling
	_, err := framework.Intent.UpdateStatefulSet(ctx, f.Namespace, set.Name, func(_ *appsv1.StatefulSet, cfg **framework.StatefulSetScheduling) {
		stored = *cfg
	})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "reading the stored spec.scheduling of %s", set.Name)
	return stored
}

// setTemplateMinCount is the user raising or lowering the gang minCount of
// the sole template of their Workload name; it returns what was stored.
func setTemplateMinCount(ctx context.Context, f *framework.Framework, name string, minCount int32) *schedulingv1beta1.Workload {
	ginkgo.GinkgoHelper()
	var stored *schedulingv1beta1.Workload
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w, err := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		w.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount = minCount
		stored, err = f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).Update(ctx, w, metav1.UpdateOptions{})
		return err
	})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "setting the template minCount of Workload %s to %d", name, minCount)
	return stored
}

// expectNoOtherWorkload asserts w is the namespace's only Workload.
func expectNoOtherWorkload(ctx context.Context, f *framework.Framework, w *schedulingv1beta1.Workload) {
	ginkgo.GinkgoHelper()
	list, err := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).List(ctx, metav1.ListOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	gomega.Expect(list.Items).To(gomega.ConsistOf(gomega.HaveField("UID", w.UID)), "Workloads of the namespace: %v", apps.Names(list.Items))
}

// expectNothingCreated asserts, for the stays-unbound period, that the
// namespace holds exactly the given Workloads and no PodGroup.
func expectNothingCreated(ctx context.Context, f *framework.Framework, workloads ...*schedulingv1beta1.Workload) {
	ginkgo.GinkgoHelper()
	var want []string
	for _, w := range workloads {
		want = append(want, w.Name+"/"+string(w.UID))
	}
	gomega.Consistently(ctx, func(ctx context.Context) (map[string][]string, error) {
		ws, err := f.ClientSet.SchedulingV1beta1().Workloads(f.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		got := map[string][]string{"workloads": {}, "podgroups": apps.Names(apps.ListPodGroups(ctx, f))}
		for _, w := range ws.Items {
			got["workloads"] = append(got["workloads"], w.Name+"/"+string(w.UID))
		}
		return got, nil
	}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(gomega.SatisfyAll(
		gomega.HaveKeyWithValue("workloads", gomega.ConsistOf(want)), gomega.HaveKeyWithValue("podgroups", gomega.BeEmpty())),
		"nothing may be created: the namespace must keep exactly the user's Workloads and no PodGroup")
}

// deleteStatefulSet deletes set (background propagation, the default of
// kubectl) and waits until it is gone, garbage collection has unlinked or
// deleted every pod it owned, and the given PodGroups are gone. With podsGone
// its pods must be gone too; without, pods that another owner keeps (a user's
// PodGroup) may stay, owned by it alone.
func deleteStatefulSet(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet, podsGone bool, podGroups ...*schedulingv1beta1.PodGroup) []string {
	ginkgo.GinkgoHelper()
	gomega.Expect(f.ClientSet.AppsV1().StatefulSets(f.Namespace).Delete(ctx, set.Name, metav1.DeleteOptions{})).To(gomega.Succeed())
	var kept []string
	gomega.Eventually(ctx, func(ctx context.Context) []string {
		var left []string
		kept = nil
		if _, err := f.ClientSet.AppsV1().StatefulSets(f.Namespace).Get(ctx, set.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			left = append(left, "statefulset/"+set.Name)
		}
		for _, pg := range podGroups {
			if _, err := f.ClientSet.SchedulingV1beta1().PodGroups(f.Namespace).Get(ctx, pg.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, "podgroup/"+pg.Name)
			}
		}
		pods, _ := framework.ListPods(ctx, apps.Pods(f, apps.StatefulSet(set)))
		for _, p := range pods {
			if podsGone || slices.ContainsFunc(p.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == set.UID }) {
				left = append(left, "pod/"+p.Name)
			} else {
				kept = append(kept, p.Name)
			}
		}
		return left
	}).WithTimeout(f.Timeouts.Cleanup).WithPolling(f.Timeouts.Poll).Should(gomega.BeEmpty(), "waiting for StatefulSet %s to be deleted and garbage-collected", set.Name)
	return kept
}

// waitForStatusReplicas waits until the StatefulSet controller has observed
// set's latest spec and written status.replicas n: its status write once the
// pods it counted are gone, the last write a scale-down makes (a real
// kubelet's graceful termination puts it seconds after the scale).
func waitForStatusReplicas(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet, n int32) {
	ginkgo.GinkgoHelper()
	gomega.Eventually(ctx, func(ctx context.Context) error {
		s, err := f.ClientSet.AppsV1().StatefulSets(f.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s.Status.ObservedGeneration < s.Generation || s.Status.Replicas != n {
			return fmt.Errorf("generation %d, observed %d, status.replicas %d", s.Generation, s.Status.ObservedGeneration, s.Status.Replicas)
		}
		return nil
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.Succeed(),
		"waiting for the StatefulSet controller to write status.replicas %d for the latest spec of %s", n, set.Name)
}

// replaceWithDecoys deletes the Workload and PodGroup of a StatefulSet at
// zero pods, w and pg, and creates decoyW and decoyPG under their names; it
// returns the decoys as created.
//
// At zero pods the StatefulSet controller may legitimately re-create both
// objects, under the same names, the next time it syncs the StatefulSet:
// KEP-6277, "The controller attempts to create Workload and PodGroup only
// when the StatefulSet has no pods associated with it yet", and "it discovers
// first and creates only what is missing". So a name that is still held
// after w or pg is gone is a re-creation (another UID), not a deletion that
// did not happen: it is deleted in turn, and the decoys go in once both names
// are free. Only the decoy Workload's own name may then block the decoy
// PodGroup through a PodGroup stamped from it (an ownerReference to its UID):
// that is a use of the decoy, found by its name, and fails the spec.
func replaceWithDecoys(ctx context.Context, f *framework.Framework, w *schedulingv1beta1.Workload, pg *schedulingv1beta1.PodGroup,
	decoyW *schedulingv1beta1.Workload, decoyPG *schedulingv1beta1.PodGroup) (*schedulingv1beta1.Workload, *schedulingv1beta1.PodGroup) {
	ginkgo.GinkgoHelper()
	sched := f.ClientSet.SchedulingV1beta1()
	var madeW *schedulingv1beta1.Workload
	var madePG *schedulingv1beta1.PodGroup
	recreated := map[types.UID]bool{}
	// free deletes the object holding a name (if it is not already going) and
	// reports whether the name is held.
	free := func(kind, name string, uid types.UID, meta metav1.Object, err error, del func(metav1.DeleteOptions) error) (bool, error) {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return true, err
		}
		if meta.GetUID() != uid && !recreated[meta.GetUID()] {
			recreated[meta.GetUID()] = true
			logf("%s %s was re-created at zero pods (uid %s, was %s): deleting it again", kind, name, meta.GetUID(), uid)
		}
		if meta.GetDeletionTimestamp() == nil {
			if err := del(metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(meta.GetUID())}}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return true, err
			}
		}
		return true, nil
	}
	gomega.Eventually(ctx, func(ctx context.Context) error {
		if madeW == nil {
			// The PodGroup first: it names the Workload.
			got, err := sched.PodGroups(f.Namespace).Get(ctx, pg.Name, metav1.GetOptions{})
			pgHeld, err := free("PodGroup", pg.Name, pg.UID, got, err, func(o metav1.DeleteOptions) error {
				return sched.PodGroups(f.Namespace).Delete(ctx, pg.Name, o)
			})
			if err != nil {
				return err
			}
			gotW, err := sched.Workloads(f.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
			wHeld, err := free("Workload", w.Name, w.UID, gotW, err, func(o metav1.DeleteOptions) error {
				return sched.Workloads(f.Namespace).Delete(ctx, w.Name, o)
			})
			if err != nil {
				return err
			}
			if pgHeld || wHeld {
				return fmt.Errorf("waiting for the names to be free: PodGroup %s held %v, Workload %s held %v", pg.Name, pgHeld, w.Name, wHeld)
			}
			if madeW, err = sched.Workloads(f.Namespace).Create(ctx, decoyW, metav1.CreateOptions{}); err != nil {
				madeW = nil
				return fmt.Errorf("creating the decoy Workload %s: %w", decoyW.Name, err)
			}
		}
		var err error
		if madePG, err = sched.PodGroups(f.Namespace).Create(ctx, decoyPG, metav1.CreateOptions{}); err == nil {
			return nil
		}
		madePG = nil
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the decoy PodGroup %s: %w", decoyPG.Name, err)
		}
		got, err := sched.PodGroups(f.Namespace).Get(ctx, decoyPG.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if slices.ContainsFunc(got.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == madeW.UID }) {
			return gomega.StopTrying(fmt.Sprintf("PodGroup %s (uid %s) was stamped from the decoy Workload %s, found by its name", got.Name, got.UID, madeW.Name))
		}
		_, err = free("PodGroup", pg.Name, pg.UID, got, nil, func(o metav1.DeleteOptions) error {
			return sched.PodGroups(f.Namespace).Delete(ctx, pg.Name, o)
		})
		if err != nil {
			return err
		}
		return fmt.Errorf("waiting for PodGroup %s (uid %s) to go before the decoy takes its name", got.Name, got.UID)
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.Succeed(),
		"replacing Workload %s and PodGroup %s with decoys of the same names", w.Name, pg.Name)
	return madeW, madePG
}

// podsNaming lists a's pods whose spec.schedulingGroup names podGroup.
func podsNaming(ctx context.Context, f *framework.Framework, a apps.App, podGroup string) []string {
	var out []string
	for _, p := range apps.Read(ctx, f, a).Pods {
		if p.Group == podGroup {
			out = append(out, p.Name)
		}
	}
	return out
}

// awaitReaction waits until the controller has acted on a change of a: either
// it made pods pods, or it raised a Warning event not in before.
func awaitReaction(ctx context.Context, f *framework.Framework, a apps.App, pods int, before []corev1.Event) {
	ginkgo.GinkgoHelper()
	seen := map[string]int32{}
	for _, e := range before {
		seen[e.Name] = e.Count
	}
	gomega.Eventually(ctx, func(ctx context.Context) (string, error) {
		s := apps.Read(ctx, f, a)
		if len(s.Pods) == pods {
			return "pods made: " + s.String(), nil
		}
		events, err := apps.Events(ctx, f, a)
		for _, e := range events {
			if count, ok := seen[e.Name]; e.Type == corev1.EventTypeWarning && (!ok || e.Count > count) {
				return "warning " + e.Reason + ": " + e.Message, err
			}
		}
		return "", err
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).ShouldNot(gomega.BeEmpty(),
		"waiting for the controller to act on %s: %d pods, or a Warning event", a, pods)
}
