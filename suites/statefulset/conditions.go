package statefulset

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/framework/apps"
)

// KEP-6277, Monitoring Requirements: "This KEP adds no condition to
// StatefulSet.status in Alpha." The rule is judged against the plain
// StatefulSet controller rather than an empty list: whatever conditions the
// cluster's StatefulSet controller sets on a StatefulSet without
// spec.scheduling, in the same situation, are not the KEP's.
var _ = ginkgo.Describe("StatefulSet status", framework.KEP(6277),
	framework.WithFeatureGate(framework.GenericWorkload, framework.WorkloadWithStatefulSet), func() {
		f := framework.New("sts-status")

		ginkgo.It("adds no condition to status.conditions beyond a plain StatefulSet's, for a gang that cannot be placed and for one that runs", framework.ID("S-I17"), func(ctx context.Context) {
			seen := watchConditions(ctx, f)

			// Twice the largest node's CPU: no pod of either fits anywhere,
			// so the plain twin is in the gang's situation (nothing binds).
			fit := framework.NodeSize(ctx, f)
			huge := fit.MaxAllocatable.DeepCopy()
			huge.Add(fit.MaxAllocatable)
			ginkgo.By(fmt.Sprintf("a gang of 2 pods of %s CPU (no node has that much) and a plain twin", huge.String()))
			stuck := create(ctx, parallel(f, "stuck", 2, huge.String()).Obj(), gang())
			stuckPlain := create(ctx, parallel(f, "stuck-plain", 2, huge.String()).Obj(), nil)
			ginkgo.By("a gang of 2 pods of 100m CPU, which runs, and a plain twin")
			runs := create(ctx, parallel(f, "runs", 2, "100m").Obj(), gang())
			runsPlain := create(ctx, parallel(f, "runs-plain", 2, "100m").Obj(), nil)

			apps.WaitForRunning(ctx, f, apps.StatefulSet(runs), 2)
			apps.WaitForRunning(ctx, f, apps.StatefulSet(runsPlain), 2)
			apps.WaitForPodsCreated(ctx, f, apps.StatefulSet(stuck), 2)
			apps.WaitForPodsCreated(ctx, f, apps.StatefulSet(stuckPlain), 2)
			w := apps.TheWorkload(ctx, f, apps.StatefulSet(stuck))
			pg := apps.ThePodGroup(ctx, f, &w)
			framework.WaitForPodGroupCondition(ctx, framework.PodGroupConditionInput{
				ClientSet: f.ClientSet, Namespace: f.Namespace, Name: pg.Name,
				Type: framework.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse, Reason: "Unschedulable",
			})
			for _, set := range []*appsv1.StatefulSet{stuck, stuckPlain, runs, runsPlain} {
				waitStatusObserved(ctx, f, set)
				gomega.Eventually(ctx, func() bool { return seen.saw(set.Name) }).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.BeTrue(),
					"the watch saw no write of StatefulSet %s: it would judge nothing", set.Name)
			}

			// A condition may come late (after a deadline, on a retry): the
			// window is as long as the implementation's retries may be apart.
			pairs := [][2]*appsv1.StatefulSet{{stuck, stuckPlain}, {runs, runsPlain}}
			check := func() []string {
				var extra []string
				for _, p := range pairs {
					gangTypes, plainTypes := seen.types(p[0].Name), seen.types(p[1].Name)
					for _, t := range gangTypes {
						if !slices.Contains(plainTypes, t) {
							extra = append(extra, fmt.Sprintf("%s: %s (the plain %s has %v)", p[0].Name, t, p[1].Name, plainTypes))
						}
					}
				}
				return append(extra, seen.err()...)
			}
			gomega.Consistently(ctx, check).WithTimeout(f.Timeouts.StaysUnbound+f.Timeouts.RetryWindow).WithPolling(f.Timeouts.Poll).Should(gomega.BeEmpty(),
				"KEP-6277 adds no condition to StatefulSet.status: conditions a gang StatefulSet got that its plain twin did not")
			for _, set := range []*appsv1.StatefulSet{stuck, stuckPlain, runs, runsPlain} {
				logf("StatefulSet %s: condition types seen %v", set.Name, seen.types(set.Name))
			}
			framework.ExpectNoPodBound(ctx, apps.Pods(f, apps.StatefulSet(stuck)))
		})
	})

// waitStatusObserved waits until the StatefulSet controller has written a
// status for set's current generation: the point from which a condition it
// adds would show.
func waitStatusObserved(ctx context.Context, f *framework.Framework, set *appsv1.StatefulSet) {
	ginkgo.GinkgoHelper()
	gomega.Eventually(ctx, func(ctx context.Context) (string, error) {
		cur, err := f.ClientSet.AppsV1().StatefulSets(f.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("observedGeneration %d, generation %d, replicas %d", cur.Status.ObservedGeneration, cur.Generation, cur.Status.Replicas),
			nil
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal(
		fmt.Sprintf("observedGeneration %d, generation %d, replicas %d", set.Generation, set.Generation, *set.Spec.Replicas)),
		"waiting for the StatefulSet controller to report %s's pods in its status", set.Name)
}

// conditionsSeen collects, from a watch of the namespace's StatefulSets, every
// condition type each one's status ever carried: one set in a write and
// removed by the next is seen too.
type conditionsSeen struct {
	mu       sync.Mutex
	byName   map[string]map[string]bool
	watchErr []string
}

func watchConditions(ctx context.Context, f *framework.Framework) *conditionsSeen {
	ginkgo.GinkgoHelper()
	s := &conditionsSeen{byName: map[string]map[string]bool{}}
	sets := f.ClientSet.AppsV1().StatefulSets(f.Namespace)
	list, err := sets.List(ctx, metav1.ListOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing StatefulSets")
	wctx, cancel := context.WithCancel(ctx)
	rw, err := watchtools.NewRetryWatcherWithContext(wctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return sets.Watch(ctx, o)
		},
	})
	if err != nil {
		cancel()
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "watching StatefulSets")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range rw.ResultChan() {
			s.observe(ev)
		}
	}()
	ginkgo.DeferCleanup(func() { cancel(); rw.Stop(); <-done })
	return s
}

func (s *conditionsSeen) observe(ev watch.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.Type == watch.Error {
		s.watchErr = append(s.watchErr, fmt.Sprintf("watch error: %v", ev.Object))
		return
	}
	set, ok := ev.Object.(*appsv1.StatefulSet)
	if !ok {
		return
	}
	if s.byName[set.Name] == nil {
		s.byName[set.Name] = map[string]bool{}
	}
	for _, c := range set.Status.Conditions {
		s.byName[set.Name][string(c.Type)] = true
	}
}

// saw says whether the watch saw a write of name.
func (s *conditionsSeen) saw(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byName[name] != nil
}

// types returns the condition types name has carried, sorted.
func (s *conditionsSeen) types(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []string{}
	for t := range s.byName[name] {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

func (s *conditionsSeen) err() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.watchErr...)
}
