package install

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workload-aware/apps-harness/framework"
)

var _ = ginkgo.Describe("Install of the reference implementation: its namespace", framework.Harness, func() {
	f := framework.New("install-namespace")

	// The controller side's account may mint controller tokens, so a pod
	// with host access in its namespace would be a way to them and past
	// them: the namespace enforces Pod Security's restricted profile.
	ginkgo.It("refuses a privileged pod in the install's namespace (Pod Security restricted, server dry run), and admits one that fits the profile", func(ctx context.Context) {
		if framework.LocalCluster != nil {
			ginkgo.Skip("the namespace ships in deploy/, which the harness's local cluster does not install")
		}
		ds := requireInstalled(ctx, f, framework.ReferenceWebhook).daemonSet
		pods := f.ClientSet.CoreV1().Pods(ds.Namespace)
		dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
		image := ds.Spec.Template.Spec.Containers[0].Image

		ginkgo.By("the control: a pod like the install's own is admitted")
		fits := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "was-harness-psa-"},
			Spec: corev1.PodSpec{
				SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
				Containers: []corev1.Container{{Name: "c", Image: image, SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
			},
		}
		_, err := pods.Create(ctx, fits, dryRun)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "a pod that fits the restricted profile must be admitted in %s", ds.Namespace)

		ginkgo.By("a privileged pod with the host's network is refused")
		hostile := fits.DeepCopy()
		hostile.Spec.HostNetwork = true
		hostile.Spec.Containers[0].SecurityContext.Privileged = ptr.To(true)
		hostile.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		_, err = pods.Create(ctx, hostile, dryRun)
		gomega.Expect(apierrors.IsForbidden(err)).To(gomega.BeTrue(),
			"a privileged hostNetwork pod in %s: want Forbidden by Pod Security (pod-security.kubernetes.io/enforce: restricted), got %v", ds.Namespace, err)
		gomega.Expect(err.Error()).To(gomega.ContainSubstring("PodSecurity"), "the refusal must be Pod Security's")
	})
})
