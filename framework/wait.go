package framework

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PodsInput selects the pods a wait looks at.
type PodsInput struct {
	ClientSet kubernetes.Interface
	Namespace string
	// LabelSelector selects the pods; empty means every pod of the namespace.
	LabelSelector string
}

// ListPods returns the selected pods, sorted by name.
func ListPods(ctx context.Context, in PodsInput) ([]corev1.Pod, error) {
	list, err := in.ClientSet.CoreV1().Pods(in.Namespace).List(ctx, metav1.ListOptions{LabelSelector: in.LabelSelector})
	if err != nil {
		return nil, err
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items, nil
}

// PodBindingState summarises pods for assertions and failure messages:
// "name=node(phase)" for bound pods and "name=<unbound>" otherwise.
type PodBindingState struct {
	Bound, Running int
	Pods           []string
	// NodeOf maps pod name to node name for bound pods.
	NodeOf map[string]string
}

func (s PodBindingState) String() string {
	return fmt.Sprintf("%d bound, %d running: %s", s.Bound, s.Running, strings.Join(s.Pods, " "))
}

// BindingState reads the selected pods' binding state.
func BindingState(ctx context.Context, in PodsInput) (PodBindingState, error) {
	pods, err := ListPods(ctx, in)
	if err != nil {
		return PodBindingState{}, err
	}
	s := PodBindingState{NodeOf: map[string]string{}}
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			s.Pods = append(s.Pods, p.Name+"=<unbound>")
			continue
		}
		s.Bound++
		s.NodeOf[p.Name] = p.Spec.NodeName
		if p.Status.Phase == corev1.PodRunning {
			s.Running++
		}
		s.Pods = append(s.Pods, fmt.Sprintf("%s=%s(%s)", p.Name, p.Spec.NodeName, p.Status.Phase))
	}
	return s, nil
}

// WaitForPodsRunning waits until exactly want pods are selected and all of them
// are bound and Running, and returns their state.
func WaitForPodsRunning(ctx context.Context, in PodsInput, want int) PodBindingState {
	var last PodBindingState
	gomega.Eventually(ctx, func(ctx context.Context) (PodBindingState, error) {
		s, err := BindingState(ctx, in)
		last = s
		return s, err
	}).WithTimeout(TestContext.Timeouts.PodsBound).WithPolling(TestContext.Timeouts.Poll).Should(
		gomega.And(
			gomega.HaveField("Bound", want), gomega.HaveField("Running", want), gomega.HaveField("Pods", gomega.HaveLen(want)),
		), "waiting for %d pods (%s) in namespace %s to be bound and Running", want, selectorText(in), in.Namespace)
	return last
}

// ExpectNoPodBound asserts that none of the selected pods is bound for the
// whole of TestContext.Timeouts.StaysUnbound.
func ExpectNoPodBound(ctx context.Context, in PodsInput) {
	gomega.Consistently(ctx, func(ctx context.Context) (PodBindingState, error) {
		return BindingState(ctx, in)
	}).WithTimeout(TestContext.Timeouts.StaysUnbound).WithPolling(TestContext.Timeouts.Poll).Should(
		gomega.HaveField("Bound", 0),
		"expected no pod (%s) of namespace %s to be bound for %s", selectorText(in), in.Namespace, TestContext.Timeouts.StaysUnbound)
}

func selectorText(in PodsInput) string {
	if in.LabelSelector == "" {
		return "all pods"
	}
	return in.LabelSelector
}

// PodGroupConditionInput names a PodGroup condition to wait for.
type PodGroupConditionInput struct {
	ClientSet kubernetes.Interface
	Namespace string
	Name      string
	Type      string
	Status    metav1.ConditionStatus
	// Reason, when set, must match too.
	Reason string
}

// WaitForPodGroupCondition waits until the PodGroup has the condition and returns it.
func WaitForPodGroupCondition(ctx context.Context, in PodGroupConditionInput) metav1.Condition {
	var found metav1.Condition
	gomega.Eventually(ctx, func(ctx context.Context) (string, error) {
		pg, err := in.ClientSet.SchedulingV1beta1().PodGroups(in.Namespace).Get(ctx, in.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		c := apimeta.FindStatusCondition(pg.Status.Conditions, in.Type)
		if c == nil {
			return "<absent>", nil
		}
		found = *c
		return string(c.Status) + "/" + c.Reason, nil
	}).WithTimeout(TestContext.Timeouts.PodGroupCondition).WithPolling(TestContext.Timeouts.Poll).Should(
		conditionMatcher(in), "waiting for PodGroup %s/%s condition %s=%s %s", in.Namespace, in.Name, in.Type, in.Status, in.Reason)
	return found
}

func conditionMatcher(in PodGroupConditionInput) gomega.OmegaMatcher {
	if in.Reason != "" {
		return gomega.Equal(string(in.Status) + "/" + in.Reason)
	}
	return gomega.HavePrefix(string(in.Status) + "/")
}

// PodGroupInitiallyScheduled is the one condition type the 1.37 scheduler writes.
const PodGroupInitiallyScheduled = schedulingv1beta1.PodGroupInitiallyScheduled
