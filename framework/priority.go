package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/yaml"

	"github.com/workload-aware/apps-harness/fixtures"
)

// The PriorityClasses of fixtures/priority/priorityclasses.yaml: the specs use
// the users' manifest, so what the README tells users to apply is what is tested.
const (
	PriorityClassesFixture = "priority/priorityclasses.yaml"
	PriorityLow            = "was-harness-low"
	PriorityHigh           = "was-harness-high"
)

// PriorityClassFixtures decodes the fixture's PriorityClasses by name.
func PriorityClassFixtures() (map[string]*schedulingv1.PriorityClass, error) {
	docs, err := fixtures.Documents(PriorityClassesFixture)
	if err != nil {
		return nil, err
	}
	out := map[string]*schedulingv1.PriorityClass{}
	for _, doc := range docs {
		pc := &schedulingv1.PriorityClass{}
		if err := yaml.UnmarshalStrict(doc, pc); err != nil {
			return nil, fmt.Errorf("%s: %w", PriorityClassesFixture, err)
		}
		out[pc.Name] = pc
	}
	for _, name := range []string{PriorityLow, PriorityHigh} {
		if out[name] == nil {
			return nil, fmt.Errorf("%s has no PriorityClass %s", PriorityClassesFixture, name)
		}
	}
	return out, nil
}

// EnsurePriorityClasses makes PriorityLow and PriorityHigh exist. It creates
// the fixture's classes that are absent and deletes, at cleanup, only those:
// a vendor's cluster may already have them (then they are used as they are,
// provided low still ranks below high). Call it from a BeforeEach registered
// before New, so that its cleanup runs after the namespace's pods are gone and
// no controller is left recreating pods of a class that no longer exists.
func EnsurePriorityClasses(ctx context.Context) {
	// Cluster-scoped, and deleted at cleanup: a spec in another Ginkgo
	// process could lose them mid-spec.
	if !AloneOnCluster() {
		ginkgo.Fail("EnsurePriorityClasses in a spec that is not Serial: it creates and deletes cluster-scoped PriorityClasses; label the spec framework.Serial")
	}
	cs := ClientSet()
	gomega.Expect(cs).NotTo(gomega.BeNil(), "the suite is not connected to a cluster")
	want, err := PriorityClassFixtures()
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	value := map[string]int32{}
	for _, name := range []string{PriorityLow, PriorityHigh} {
		got, err := cs.SchedulingV1().PriorityClasses().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			got, err = cs.SchedulingV1().PriorityClasses().Create(ctx, want[name].DeepCopy(), metav1.CreateOptions{})
			if err == nil {
				ginkgo.DeferCleanup(deletePriorityClass, cs, name, got.UID)
			}
		}
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "getting or creating PriorityClass %s", name)
		value[name] = got.Value
	}
	gomega.Expect(value[PriorityLow]).To(gomega.BeNumerically("<", value[PriorityHigh]),
		"the cluster's PriorityClass %s must rank below %s for the preemption specs", PriorityLow, PriorityHigh)
}

// deletePriorityClass deletes the class this process created (UID precondition:
// never one somebody recreated meanwhile).
func deletePriorityClass(ctx context.Context, cs kubernetes.Interface, name string, uid types.UID) {
	err := cs.SchedulingV1().PriorityClasses().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		ginkgo.Fail(fmt.Sprintf("deleting PriorityClass %s: %v", name, err))
	}
}

// PreemptionInput describes one preemption experiment: a running
// low-priority workload (Victims) and a high-priority preemptor that fits only
// by evicting some of it.
type PreemptionInput struct {
	// Victims selects the low-priority workload's pods; all must be Running.
	Victims PodsInput
	// Submit creates the preemptor.
	Submit func(ctx context.Context)
	// Preemptor selects the preemptor's pods; PreemptorPods of them must run.
	Preemptor     PodsInput
	PreemptorPods int
}

// PreemptionWatch records what happens to the victim workload's original
// pods (by UID: replacements may reuse their names) from before the
// preemptor exists. It watches rather than diffing at the end, so a pod that
// goes and comes back under the same name, or goes late, is still seen.
type PreemptionWatch struct {
	mu sync.Mutex
	// original maps UID to the pod as it ran before the preemptor.
	original map[types.UID]corev1.Pod
	// evicted: original pods seen terminating or deleted, in order.
	evicted []types.UID
	// disruption: the DisruptionTarget condition seen on an original pod.
	disruption map[types.UID]string
	watchErr   string
	// Preemptor is the preemptor pods' state once all of them ran.
	Preemptor PodBindingState
}

// Preempt records the Running victims, starts watching them, submits the
// preemptor and waits until all its pods run. The returned watch keeps
// recording until the spec ends.
func Preempt(ctx context.Context, in PreemptionInput) *PreemptionWatch {
	cs := in.Victims.ClientSet
	// The list's resourceVersion is where the watch starts: nothing between
	// the two is missed.
	list, err := cs.CoreV1().Pods(in.Victims.Namespace).List(ctx, metav1.ListOptions{LabelSelector: in.Victims.LabelSelector})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing the victim pods")
	w := &PreemptionWatch{original: map[types.UID]corev1.Pod{}, disruption: map[types.UID]string{}}
	for _, p := range list.Items {
		gomega.Expect(p.Status.Phase).To(gomega.Equal(corev1.PodRunning), "victim pod %s must run before the preemptor comes", p.Name)
		gomega.Expect(p.DeletionTimestamp).To(gomega.BeNil(), "victim pod %s is already terminating", p.Name)
		w.original[p.UID] = p
	}
	gomega.Expect(w.original).NotTo(gomega.BeEmpty(), "no victim pod (%s) runs", selectorText(in.Victims))

	wctx, cancel := context.WithCancel(ctx)
	rw, err := watchtools.NewRetryWatcherWithContext(wctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = in.Victims.LabelSelector
			return cs.CoreV1().Pods(in.Victims.Namespace).Watch(ctx, o)
		},
	})
	if err != nil {
		cancel()
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "watching the victim pods")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range rw.ResultChan() {
			w.observe(ev)
		}
	}()
	ginkgo.DeferCleanup(func() { cancel(); rw.Stop(); <-done })

	in.Submit(ctx)
	w.Preemptor = WaitForPodsRunning(ctx, in.Preemptor, in.PreemptorPods)
	return w
}

func (w *PreemptionWatch) observe(ev watch.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ev.Type == watch.Error {
		w.watchErr = fmt.Sprintf("%v", ev.Object)
		return
	}
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	if _, orig := w.original[p.UID]; !orig {
		return // the preemptor or a replacement
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			w.disruption[p.UID] = c.Reason
		}
	}
	if ev.Type == watch.Deleted || p.DeletionTimestamp != nil {
		for _, uid := range w.evicted {
			if uid == p.UID {
				return
			}
		}
		w.evicted = append(w.evicted, p.UID)
	}
}

// PreemptionOutcome is what the watch saw, as one value for matchers and
// failure messages.
type PreemptionOutcome struct {
	Originals int
	// Evicted and Survivors name the original pods ("name@node").
	Evicted, Survivors []string
	// NotMarked names evicted pods that never showed DisruptionTarget with
	// reason PreemptionByScheduler: something other than preemption took them.
	NotMarked  []string
	WatchError string
}

func (o PreemptionOutcome) String() string {
	return fmt.Sprintf("%d of %d original pods evicted %v, survivors %v, evicted without DisruptionTarget/PreemptionByScheduler %v%s",
		len(o.Evicted), o.Originals, o.Evicted, o.Survivors, o.NotMarked, map[bool]string{true: ", watch error: " + o.WatchError}[o.WatchError != ""])
}

// Outcome reports what happened to the original pods so far.
func (w *PreemptionWatch) Outcome() PreemptionOutcome {
	w.mu.Lock()
	defer w.mu.Unlock()
	o := PreemptionOutcome{Originals: len(w.original), Evicted: []string{}, Survivors: []string{}, NotMarked: []string{}, WatchError: w.watchErr}
	gone := map[types.UID]bool{}
	for _, uid := range w.evicted {
		gone[uid] = true
		p := w.original[uid]
		o.Evicted = append(o.Evicted, p.Name+"@"+p.Spec.NodeName)
		if w.disruption[uid] != corev1.PodReasonPreemptionByScheduler {
			o.NotMarked = append(o.NotMarked, p.Name)
		}
	}
	for uid, p := range w.original {
		if !gone[uid] {
			o.Survivors = append(o.Survivors, p.Name+"@"+p.Spec.NodeName)
		}
	}
	sort.Strings(o.Evicted)
	sort.Strings(o.Survivors)
	return o
}

// ExpectEvicted waits until exactly want original pods were evicted, each
// marked by the scheduler as a preemption victim, and then holds for
// Timeouts.StaysUnbound that no further original pod goes and that the
// survivors still run, with the same UID, on the same node.
func (w *PreemptionWatch) ExpectEvicted(ctx context.Context, victims PodsInput, want int) PreemptionOutcome {
	matches := gomega.SatisfyAll(
		gomega.HaveField("Evicted", gomega.HaveLen(want)),
		gomega.HaveField("NotMarked", gomega.BeEmpty()),
		gomega.HaveField("WatchError", gomega.BeEmpty()),
	)
	gomega.EventuallyWithOffset(1, ctx, func() (PreemptionOutcome, error) {
		o := w.Outcome()
		if len(o.Evicted) > want {
			// Evictions never come back: fail now rather than at the timeout.
			return o, gomega.StopTrying(fmt.Sprintf("%d original pods were preempted, more than %d: %s", len(o.Evicted), want, o))
		}
		return o, nil
	}).WithTimeout(TestContext.Timeouts.PodsBound).WithPolling(TestContext.Timeouts.Poll).
		Should(matches, "waiting for exactly %d of the original pods to be preempted", want)
	gomega.ConsistentlyWithOffset(1, ctx, func(ctx context.Context) (PreemptionOutcome, error) {
		return w.Outcome(), w.survivorsUndisturbed(ctx, victims)
	}).WithTimeout(TestContext.Timeouts.StaysUnbound).WithPolling(TestContext.Timeouts.Poll).
		Should(matches, "expected no more than %d original pods to be preempted, and the others to keep running where they were", want)
	o := w.Outcome()
	ginkgo.GinkgoWriter.Printf("preemption: %s; preemptor %s\n", o, w.Preemptor)
	return o
}

// survivorsUndisturbed checks every original pod the watch has not seen go
// still exists with its UID, on its node, Running.
func (w *PreemptionWatch) survivorsUndisturbed(ctx context.Context, victims PodsInput) error {
	pods, err := ListPods(ctx, victims)
	if err != nil {
		return err
	}
	now := map[types.UID]corev1.Pod{}
	for _, p := range pods {
		now[p.UID] = p
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	gone := map[types.UID]bool{}
	for _, uid := range w.evicted {
		gone[uid] = true
	}
	var bad []string
	for uid, was := range w.original {
		if gone[uid] {
			continue
		}
		p, ok := now[uid]
		switch {
		case !ok:
			bad = append(bad, was.Name+" is gone (the watch missed it)")
		case p.Spec.NodeName != was.Spec.NodeName || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil:
			bad = append(bad, fmt.Sprintf("%s is on %q (was %q), phase %s, terminating %t", p.Name, p.Spec.NodeName, was.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("surviving pods disturbed: %s", strings.Join(bad, "; "))
	}
	return nil
}
