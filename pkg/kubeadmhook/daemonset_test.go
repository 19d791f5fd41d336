package kubeadmhook

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The admission side stopped and started again (or restored after an
// interrupted run) is its pristine DaemonSet again: its own node selector,
// its args, no hook annotation. The fake clientset reports no pod, so the
// rollout waits end at once; what is checked is the template the hook writes.
func TestStopAdmissionRoundTrip(t *testing.T) {
	for _, undo := range []string{"StartAdmission", "Restore"} {
		t.Run(undo, func(t *testing.T) {
			ctx := context.Background()
			pristine := &appsv1.DaemonSet{
				ObjectMeta: metav1.ObjectMeta{Name: "was-webhook", Namespace: "was-system"},
				Spec: appsv1.DaemonSetSpec{
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "webhook"}},
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
						NodeSelector: map[string]string{"node-role.kubernetes.io/control-plane": ""},
						Containers:   []corev1.Container{{Name: "webhook", Args: []string{"--controllers=", "--v=2"}}},
					}},
				},
			}
			controllers := pristine.DeepCopy()
			controllers.Name = "was-controller-manager"
			cs := fake.NewClientset(pristine.DeepCopy(), controllers)
			h := &Hook{Client: cs, Namespace: "was-system", AdmissionDaemonSet: "was-webhook", ControllersDaemonSet: "was-controller-manager"}

			if err := h.StopAdmission(ctx); err != nil {
				t.Fatalf("StopAdmission: %v", err)
			}
			stopped, _ := cs.AppsV1().DaemonSets("was-system").Get(ctx, "was-webhook", metav1.GetOptions{})
			if got := stopped.Spec.Template.Spec.NodeSelector[unscheduledLabel]; got != "true" {
				t.Errorf("stopped: node selector %v, want %s=true", stopped.Spec.Template.Spec.NodeSelector, unscheduledLabel)
			}
			if _, ok := stopped.Annotations[annotationState]; !ok {
				t.Errorf("stopped: no %s annotation, so Check and Restore would not see the change", annotationState)
			}

			var err error
			if undo == "StartAdmission" {
				err = h.StartAdmission(ctx)
			} else {
				err = h.Restore(ctx)
			}
			if err != nil && undo == "StartAdmission" {
				t.Fatalf("%s: %v", undo, err)
			}
			// Restore also rewrites static pods through NodeExec, which this
			// test has none of: only the DaemonSet matters here.
			got, _ := cs.AppsV1().DaemonSets("was-system").Get(ctx, "was-webhook", metav1.GetOptions{})
			if diff := cmp.Diff(pristine.Spec, got.Spec); diff != "" {
				t.Errorf("after %s the DaemonSet is not pristine (-want +got):\n%s", undo, diff)
			}
			if len(got.Annotations) != 0 {
				t.Errorf("after %s: annotations %v left", undo, got.Annotations)
			}
		})
	}
}

// A pod of the current template that keeps exiting with an error is a
// refusal, said at once; one exit (a crash point) or an old template's
// crash-looping pod is not.
func TestRefusedToRun(t *testing.T) {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "was-controller-manager", Namespace: "was-system", Generation: 3},
		Spec:       appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ctl"}}},
	}
	pod := func(generation string, restarts int32, exit int32, waiting string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "ctl-" + generation, Namespace: "was-system",
				Labels: map[string]string{"app": "ctl", podTemplateGenerationLabel: generation}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "ctl", RestartCount: restarts,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit,
					Message: "usage...\ninvalid argument: WorkloadWithDeployment is enabled, but depends on features that are disabled: [GenericWorkload]"}}}}},
		}
	}
	for _, c := range []struct {
		name    string
		pod     *corev1.Pod
		refused bool
	}{
		{"current template, exits again and again", pod("3", 3, 2, "CrashLoopBackOff"), true},
		{"current template, exited twice (a transient error)", pod("3", 2, 2, "CrashLoopBackOff"), false},
		{"current template, failed before but starting again", pod("3", 4, 2, "ContainerCreating"), false},
		{"current template, restarted after clean exits", pod("3", 4, 0, "CrashLoopBackOff"), false},
		{"an older template's pod", pod("2", 5, 1, "CrashLoopBackOff"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &Hook{Client: fake.NewClientset(c.pod)}
			sel, _ := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
			got, err := h.refusedToRun(context.Background(), ds, sel)
			if err != nil {
				t.Fatal(err)
			}
			if (got != "") != c.refused {
				t.Errorf("refusedToRun = %q, want refused %t", got, c.refused)
			}
			if c.refused && !strings.Contains(got, "depends on features that are disabled") {
				t.Errorf("refusedToRun = %q: want the termination message's last line", got)
			}
		})
	}
}
