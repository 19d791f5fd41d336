// Package packaging holds the harness's checks of how the reference
// implementation is packaged for real clusters (deploy/, kind-config/):
// whatever can be proven without a container engine. Import the package to
// register the specs.
package packaging

import (
	"context"
	"fmt"
	"slices"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/workload-aware/apps-harness/deploy"
	"github.com/workload-aware/apps-harness/framework"
)

var _ = ginkgo.Describe("Packaging of the reference implementation", framework.Harness, func() {
	f := framework.New("packaging")

	// `kubectl apply --dry-run=server -k deploy/` as a repeatable check: the
	// API server validates and admits every rendered object (schemas, RBAC
	// escalation checks, the priority class, the webhook's CEL
	// matchConditions) without storing anything, so nothing needs cleanup.
	ginkgo.It("has every object of deploy/ accepted by the API server (server-side dry-run create)", func(ctx context.Context) {
		objs, err := deploy.Render()
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "rendering deploy/ with kustomize")
		gomega.Expect(objs).NotTo(gomega.BeEmpty(), "deploy/ rendered no object")
		// deploy/ is the reference's packaging, not the implementation under
		// test: against a vendor's cluster its dry run would judge our
		// manifests (names, priority class, webhook) against their cluster
		// and could fail their run for nothing they did.
		if ok, why := referenceUnderTest(ctx, f, objs); !ok {
			ginkgo.Skip("deploy/ is checked only where the implementation under test is the harness's reference on the harness's own cluster: " + why)
		}

		cfg := framework.RESTConfig()
		dyn, err := dynamic.NewForConfig(cfg)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		disc, err := discovery.NewDiscoveryClientForConfig(cfg)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))

		// A dry-run namespace does not exist for the objects in it: unless
		// it exists (deploy/ installed on kind, or the local cluster's add-on,
		// which creates it for the controllers' Lease), they are checked in
		// the spec's namespace.
		_, err = f.ClientSet.CoreV1().Namespaces().Get(ctx, deploy.Namespace, metav1.GetOptions{})
		installed := err == nil
		for _, obj := range objs {
			what := fmt.Sprintf("%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
			gvk := obj.GroupVersionKind()
			mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "the server does not serve %s", what)
			if obj.GetNamespace() == deploy.Namespace && !installed {
				obj.SetNamespace(f.Namespace)
			}
			api := dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
			created, err := dryRunCreate(ctx, api, obj)
			gomega.Expect(err).NotTo(gomega.HaveOccurred(), "server-side dry-run create of %s", what)
			gomega.Expect(created.GetKind()).To(gomega.Equal(obj.GetKind()), "the dry run of %s returned another kind", what)
			gomega.Expect(created.GetUID()).NotTo(gomega.BeEmpty(), "the dry run of %s was not admitted as a new object", what)
		}
	})
})

// dryRunCreate creates obj with dryRun=All. An object of that name may exist
// (the harness installs the same RBAC and webhook configuration, kind has
// deploy/ applied): it is then created under a generated name, which the API
// server validates the same way.
func dryRunCreate(ctx context.Context, api dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	opts := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict}
	created, err := api.Create(ctx, obj, opts)
	if !apierrors.IsAlreadyExists(err) {
		return created, err
	}
	renamed := obj.DeepCopy()
	renamed.SetGenerateName(obj.GetName() + "-")
	renamed.SetName("")
	ginkgo.By(fmt.Sprintf("%s %s exists: dry-run creating it as %s*", obj.GetKind(), obj.GetName(), renamed.GetGenerateName()))
	return api.Create(ctx, renamed, opts)
}

// referenceUnderTest reports whether the implementation under test is the
// reference packaged by deploy/: the harness's local cluster running the
// reference add-on (framework.ReferenceWebhook and
// framework.ReferenceControllerManager), or a cluster where deploy/ itself is
// installed (hack/e2e-kind.sh applies it: each DaemonSet it renders runs in
// deploy.Namespace). Otherwise it says what it saw.
func referenceUnderTest(ctx context.Context, f *framework.Framework, objs []*unstructured.Unstructured) (bool, string) {
	if lc := framework.LocalCluster; lc != nil {
		running := lc.RunningComponents()
		if slices.Contains(running, framework.ReferenceWebhook) && slices.Contains(running, framework.ReferenceControllerManager) {
			return true, ""
		}
		return false, fmt.Sprintf("the local cluster runs the add-on %q, not the reference's %s and %s", framework.TestContext.Addon, framework.ReferenceWebhook, framework.ReferenceControllerManager)
	}
	var daemonSets int
	for _, obj := range objs {
		if obj.GetKind() != "DaemonSet" {
			continue
		}
		daemonSets++
		if _, err := f.ClientSet.AppsV1().DaemonSets(obj.GetNamespace()).Get(ctx, obj.GetName(), metav1.GetOptions{}); err != nil {
			return false, fmt.Sprintf("an existing cluster (vendor mode) without deploy/ installed (DaemonSet %s/%s: %v)", obj.GetNamespace(), obj.GetName(), err)
		}
	}
	if daemonSets == 0 {
		return false, "deploy/ renders no DaemonSet to look for on this existing cluster"
	}
	return true, ""
}
