package install

import (
	"fmt"
	"slices"

	"github.com/onsi/ginkgo/v2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/workload-aware/apps-harness/deploy"
	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// requireComponent returns the local cluster, skipping the spec, with the
// reason, when the suite does not own one or it does not run component.
func requireComponent(component localcluster.Component) *localcluster.Cluster {
	lc := framework.RequireLocalCluster()
	if !slices.Contains(lc.RunningComponents(), component) {
		ginkgo.Skip("the local cluster runs without " + string(component) + " (no reference implementation add-on)")
	}
	return lc
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
