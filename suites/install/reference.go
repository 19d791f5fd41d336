package install

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"

	"github.com/workload-aware/apps-harness/api/intent"
	"github.com/workload-aware/apps-harness/deploy"
	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/pkg/kubeadmhook"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// installed is one component of the reference implementation as a spec
// finds it: a process of the harness's local cluster, or, on an existing
// cluster (kind), the DaemonSet deploy/ runs it as. The install specs are
// about deploy/'s install, so on an existing cluster they work on its
// DaemonSets directly, and restore what they change.
type installed struct {
	component localcluster.Component
	// local is the harness's cluster; nil on an existing cluster.
	local *localcluster.Cluster
	// daemonSet runs the component on an existing cluster (as the spec
	// found it); nil on the local cluster.
	daemonSet *appsv1.DaemonSet
}

// requireInstalled finds component, skipping the spec, with the reason,
// when neither the local cluster runs it nor deploy/ is installed.
func requireInstalled(ctx context.Context, f *framework.Framework, component localcluster.Component) *installed {
	ginkgo.GinkgoHelper()
	if lc := framework.LocalCluster; lc != nil {
		if !slices.Contains(lc.RunningComponents(), component) {
			ginkgo.Skip("the local cluster runs without " + string(component) + " (no reference implementation add-on)")
		}
		return &installed{component: component, local: lc}
	}
	namespace, name := daemonSetOf(component)
	ds, err := f.ClientSet.AppsV1().DaemonSets(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		ginkgo.Skip(fmt.Sprintf("the reference implementation is not installed from deploy/ on this cluster: no DaemonSet %s/%s runs %s", namespace, name, component))
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "reading DaemonSet %s/%s", namespace, name)
	return &installed{component: component, daemonSet: ds}
}

// daemonSetOf names the DaemonSet of deploy/ that runs component (the
// controller-manager's as --reference-controllers names it).
func daemonSetOf(component localcluster.Component) (namespace, name string) {
	if component == framework.ReferenceControllerManager {
		if ns, n, ok := strings.Cut(framework.TestContext.ReferenceControllers, "/"); ok {
			return ns, n
		}
	}
	for _, o := range rendered().objs {
		if o.GetKind() != "DaemonSet" {
			continue
		}
		ds := get[appsv1.DaemonSet](rendered(), "DaemonSet", o.GetNamespace(), o.GetName())
		if args := ds.Spec.Template.Spec.Containers[0].Args; slices.Contains(args, "--controllers=") == (component == framework.ReferenceWebhook) {
			return ds.Namespace, ds.Name
		}
	}
	ginkgo.Fail("deploy/ renders no DaemonSet for " + string(component))
	return "", ""
}

// user is the user the component authenticates as.
func (in *installed) user() string {
	if in.local != nil {
		return componentUser(in.local, in.component)
	}
	return serviceaccount.MakeUsername(in.daemonSet.Namespace, in.daemonSet.Spec.Template.Spec.ServiceAccountName)
}

// requireLocal returns the local cluster, skipping the spec when the
// component runs on an existing cluster (a spec not yet made for one).
func (in *installed) requireLocal() *localcluster.Cluster {
	if in.local == nil {
		ginkgo.Skip(fmt.Sprintf("needs the harness's local cluster: on an existing cluster %s runs as DaemonSet %s/%s, which this spec does not drive yet", in.component, in.daemonSet.Namespace, in.daemonSet.Name))
	}
	return in.local
}

// stop stops the component until the spec ends: on the local cluster its
// process is killed; on an existing cluster its DaemonSet runs no pod
// (kubeadmhook's StopAdmission, which `was-harness kubeadm restore` undoes
// too, should the run die before the cleanup).
func (in *installed) stop(ctx context.Context, f *framework.Framework) {
	ginkgo.GinkgoHelper()
	if in.local != nil {
		stopComponent(ctx, in.local, in.component)
		return
	}
	gomega.Expect(in.component).To(gomega.Equal(framework.ReferenceWebhook), "only the webhook's DaemonSet can be stopped on an existing cluster")
	h := in.hook(f)
	ginkgo.By(fmt.Sprintf("stopping %s: DaemonSet %s/%s runs no pod", in.component, in.daemonSet.Namespace, in.daemonSet.Name))
	ginkgo.DeferCleanup(func(ctx context.Context) {
		ginkgo.By("starting " + string(in.component) + " again")
		gomega.Expect(h.StartAdmission(ctx)).To(gomega.Succeed(), "starting DaemonSet %s/%s again", in.daemonSet.Namespace, in.daemonSet.Name)
	})
	gomega.Expect(h.StopAdmission(ctx)).To(gomega.Succeed(), "stopping DaemonSet %s/%s", in.daemonSet.Namespace, in.daemonSet.Name)
}

// hook drives deploy/'s DaemonSets on an existing cluster as the kubeadm
// hooks do (pkg/kubeadmhook), so that what a spec changes is kept in the
// same annotations the hooks' restore undoes.
func (in *installed) hook(f *framework.Framework) *kubeadmhook.Hook {
	_, controllers := daemonSetOf(framework.ReferenceControllerManager)
	_, admission := daemonSetOf(framework.ReferenceWebhook)
	return &kubeadmhook.Hook{
		Client: f.ClientSet, Namespace: in.daemonSet.Namespace, AdmissionDaemonSet: admission, ControllersDaemonSet: controllers,
		WebhookConfiguration: rendered().webhookConfiguration().Name, AdmissionProbeAnnotation: intent.DeploymentAnnotation,
		Lease: leaseNamespace + "/" + leaseName, Timeout: 3 * time.Minute,
		Logf: func(format string, args ...any) { ginkgo.GinkgoWriter.Printf("[kubeadm-hook] "+format+"\n", args...) },
	}
}

// pods are the component's pods on an existing cluster.
func (in *installed) pods(ctx context.Context, f *framework.Framework) []corev1.Pod {
	ginkgo.GinkgoHelper()
	list, err := f.ClientSet.CoreV1().Pods(in.daemonSet.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(in.daemonSet.Spec.Selector.MatchLabels).String()})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "listing the pods of DaemonSet %s/%s", in.daemonSet.Namespace, in.daemonSet.Name)
	return list.Items
}

// componentUser is the user an add-on component of the local cluster
// authenticates as (its add-on descriptor says).
func componentUser(lc *localcluster.Cluster, component localcluster.Component) string {
	for _, a := range lc.Config().Addons {
		for _, c := range a.Components {
			if c.Name == component {
				return c.User
			}
		}
	}
	ginkgo.Fail("no add-on component " + string(component))
	return ""
}

// rendered is deploy/ as `kubectl apply -k` would apply it.
func rendered() *deployObjects {
	objs, err := deploy.Render()
	if err != nil {
		ginkgo.Fail("rendering deploy/: " + err.Error())
	}
	return &deployObjects{objs}
}

type deployObjects struct{ objs []*unstructured.Unstructured }

// get decodes the rendered object kind namespace/name into T.
func get[T any](d *deployObjects, kind, namespace, name string) *T {
	for _, o := range d.objs {
		if o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name {
			out := new(T)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
				ginkgo.Fail(fmt.Sprintf("decoding %s %s/%s of deploy/: %v", kind, namespace, name, err))
			}
			return out
		}
	}
	ginkgo.Fail(fmt.Sprintf("deploy/ renders no %s %s/%s", kind, namespace, name))
	return nil
}

// webhookConfiguration is the reference's ValidatingWebhookConfiguration as
// deploy/ (and the local cluster) register it.
func (d *deployObjects) webhookConfiguration() *admissionregistrationv1.ValidatingWebhookConfiguration {
	for _, o := range d.objs {
		if o.GetKind() == "ValidatingWebhookConfiguration" {
			return get[admissionregistrationv1.ValidatingWebhookConfiguration](d, o.GetKind(), "", o.GetName())
		}
	}
	ginkgo.Fail("deploy/ renders no ValidatingWebhookConfiguration")
	return nil
}
