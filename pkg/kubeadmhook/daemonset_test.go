package kubeadmhook

import (
	"context"
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
