// Package packaging holds the harness's checks of how the reference
// implementation is packaged for real clusters (deploy/, kind-config/):
// whatever can be proven without a container engine. Import the package to
// register the specs.
package packaging

import (
	"context"
	"fmt"

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

		cfg := framework.RESTConfig()
		dyn, err := dynamic.NewForConfig(cfg)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		disc, err := discovery.NewDiscoveryClientForConfig(cfg)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))

		// A dry-run namespace does not exist for the objects in it: unless
		// deploy/ is installed (kind), they are checked in the spec's namespace.
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
