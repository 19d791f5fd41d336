package apps

import (
	"context"
	"fmt"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workload-aware/apps-harness/framework"
)

// WaitForState polls Read until it matches, and returns the match; what says
// what is awaited, for the failure message.
func WaitForState(ctx context.Context, f *framework.Framework, a App, what string, matcher gomega.OmegaMatcher) State {
	var last State
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) State {
		last = Read(ctx, f, a)
		return last
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(matcher, "waiting for %s: %s", a, what)
	return last
}

// KeepsState asserts a's state keeps matching for the stays-unbound period:
// "nothing happens" after an action.
func KeepsState(ctx context.Context, f *framework.Framework, a App, what string, matcher gomega.OmegaMatcher) {
	gomega.ConsistentlyWithOffset(1, ctx, func(ctx context.Context) State {
		return Read(ctx, f, a)
	}).WithTimeout(f.Timeouts.StaysUnbound).WithPolling(f.Timeouts.Poll).Should(matcher, "%s must keep: %s", a, what)
}

// WaitForGang waits until a runs as a gang: one Workload and one PodGroup at
// minCount (0: basic) and n bound pods, all naming that PodGroup.
func WaitForGang(ctx context.Context, f *framework.Framework, a App, minCount int32, n int) State {
	return WaitForState(ctx, f, a, fmt.Sprintf("a group of %d at minCount %d", n, minCount), Gang(minCount, n))
}

// WaitForUngrouped waits until a has no Workload or PodGroup and n bound pods
// that name none.
func WaitForUngrouped(ctx context.Context, f *framework.Framework, a App, n int) State {
	return WaitForState(ctx, f, a, fmt.Sprintf("%d ordinary pods and no Workload or PodGroup", n), UngroupedOnly(n))
}

// WaitForMinCounts waits until a has one Workload whose template and one
// live PodGroup whose spec both carry gang minCount want.
func WaitForMinCounts(ctx context.Context, f *framework.Framework, a App, want int32) State {
	return WaitForState(ctx, f, a, fmt.Sprintf("the Workload template and the PodGroup at minCount %d", want), AtMinCount(want))
}

// WaitForWorkloadOnly waits until a has one Workload at minCount want and no
// PodGroup at all (a Deployment at zero replicas).
func WaitForWorkloadOnly(ctx context.Context, f *framework.Framework, a App, want int32) State {
	return WaitForState(ctx, f, a, fmt.Sprintf("the Workload at minCount %d and no PodGroup", want), gomega.SatisfyAll(
		gomega.HaveField("Workloads", gomega.ConsistOf(gomega.HaveField("MinCount", want))),
		gomega.HaveField("PodGroups", gomega.BeEmpty())))
}

// WaitForRunning waits until a has exactly n pods, all bound and Running.
func WaitForRunning(ctx context.Context, f *framework.Framework, a App, n int) framework.PodBindingState {
	return framework.WaitForPodsRunning(ctx, Pods(f, a), n)
}

// WaitForPodsCreated waits until a has exactly n pods, bound or not,
// terminating ones included, and returns them.
func WaitForPodsCreated(ctx context.Context, f *framework.Framework, a App, n int) []corev1.Pod {
	var pods []corev1.Pod
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) ([]string, error) {
		var err error
		pods, err = framework.ListPods(ctx, Pods(f, a))
		return Names(pods), err
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.HaveLen(n),
		"waiting for the %s controller to leave exactly %d pods of %s", a.Kind, n, a)
	return pods
}

// WaitForObserved waits until a's controller has observed a's current
// generation (status.observedGeneration): it has seen the last change of
// a's spec, whatever it did about it.
func WaitForObserved(ctx context.Context, f *framework.Framework, a App) {
	gomega.EventuallyWithOffset(1, ctx, func(ctx context.Context) (string, error) {
		var generation, observed int64
		switch a.Kind {
		case KindDeployment:
			d, err := f.ClientSet.AppsV1().Deployments(f.Namespace).Get(ctx, a.Name, metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			generation, observed = d.Generation, d.Status.ObservedGeneration
		case KindStatefulSet:
			s, err := f.ClientSet.AppsV1().StatefulSets(f.Namespace).Get(ctx, a.Name, metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			generation, observed = s.Generation, s.Status.ObservedGeneration
		default:
			return "", fmt.Errorf("%s has no observedGeneration", a)
		}
		if observed >= generation {
			return "observed", nil
		}
		return fmt.Sprintf("generation %d, observed %d", generation, observed), nil
	}).WithTimeout(f.Timeouts.PodsBound).WithPolling(f.Timeouts.Poll).Should(gomega.Equal("observed"),
		"waiting for the %s controller to observe the latest spec of %s", a.Kind, a)
}
