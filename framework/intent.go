package framework

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/workload-aware/apps-harness/api/intent"
)

// DeploymentScheduling is KEP-6276's spec.scheduling.
type DeploymentScheduling = intent.DeploymentSchedulingConfiguration

// IntentMode says how the suite writes a workload's scheduling intent.
type IntentMode string

const (
	// IntentAnnotation writes the reference implementation's documented
	// annotation (apps/v1 has no spec.scheduling in Kubernetes 1.37).
	IntentAnnotation IntentMode = "annotation"
	// IntentNative writes spec.scheduling, for a server whose apps/v1 schema has it.
	IntentNative IntentMode = "native"
)

var deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// Intent is the one seam through which every spec writes and reads
// scheduling intent, so an implementation that serves the native field is
// tested by the same specs, unchanged. ConnectCluster sets it up.
var Intent *IntentSeam

// IntentSeam writes intent in the mode the server supports: Mode for
// Deployments, StatefulSetMode for StatefulSets (a server may serve one
// native field and not the other).
type IntentSeam struct {
	Mode            IntentMode
	StatefulSetMode IntentMode
	dynamic         dynamic.Interface
}

// StatefulSetScheduling is KEP-6277's spec.scheduling.
type StatefulSetScheduling = intent.StatefulSetSchedulingConfiguration

var statefulSetsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}

// NewIntentSeam detects the mode from the server's OpenAPI v3 schema of
// apps/v1 DeploymentSpec: native when it has a "scheduling" property.
func NewIntentSeam(cfg *rest.Config) (*IntentSeam, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	doc, err := appsSchema(dc)
	if err != nil {
		return nil, err
	}
	seam := &IntentSeam{dynamic: dyn}
	if seam.Mode, err = modeFromSchema(doc, "io.k8s.api.apps.v1.DeploymentSpec"); err != nil {
		return nil, err
	}
	if seam.StatefulSetMode, err = modeFromSchema(doc, "io.k8s.api.apps.v1.StatefulSetSpec"); err != nil {
		return nil, err
	}
	return seam, nil
}

func appsSchema(dc discovery.DiscoveryInterface) ([]byte, error) {
	paths, err := dc.OpenAPIV3().Paths()
	if err != nil {
		return nil, fmt.Errorf("reading the OpenAPI v3 paths: %w", err)
	}
	gv, ok := paths["apis/apps/v1"]
	if !ok {
		return nil, fmt.Errorf("the server publishes no OpenAPI v3 schema for apps/v1")
	}
	return gv.Schema("application/json")
}

// modeFromSchema reads a spec type's properties from an OpenAPI v3 document:
// native when it has "scheduling".
func modeFromSchema(doc []byte, specType string) (IntentMode, error) {
	var parsed struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &parsed); err != nil {
		return "", fmt.Errorf("parsing the apps/v1 OpenAPI schema: %w", err)
	}
	spec, ok := parsed.Components.Schemas[specType]
	if !ok {
		return "", fmt.Errorf("the apps/v1 OpenAPI schema has no %s", specType)
	}
	if _, ok := spec.Properties["scheduling"]; ok {
		return IntentNative, nil
	}
	return IntentAnnotation, nil
}

// WithDeploymentScheduling returns a copy of d that carries cfg (nil: none) as
// an object ready to create: annotation mode sets the annotation on the typed
// object; native mode sets spec.scheduling on its unstructured form.
func (s *IntentSeam) WithDeploymentScheduling(d *appsv1.Deployment, cfg *DeploymentScheduling) (*unstructured.Unstructured, error) {
	d = d.DeepCopy()
	d.APIVersion, d.Kind = "apps/v1", "Deployment"
	if s.Mode == IntentAnnotation {
		var err error
		if d.Annotations, err = intent.SetAnnotation(d.Annotations, cfg); err != nil {
			return nil, err
		}
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: content}
	if s.Mode == IntentNative && cfg != nil {
		if err := setField(u, cfg, "spec", "scheduling"); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// CreateDeployment creates d with scheduling intent cfg (nil: a plain Deployment).
func (s *IntentSeam) CreateDeployment(ctx context.Context, d *appsv1.Deployment, cfg *DeploymentScheduling) (*appsv1.Deployment, error) {
	u, err := s.WithDeploymentScheduling(d, cfg)
	if err != nil {
		return nil, err
	}
	created, err := s.dynamic.Resource(deploymentsGVR).Namespace(d.Namespace).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return toDeployment(created)
}

// DeploymentScheduling reads the stored intent of a Deployment (nil: none).
func (s *IntentSeam) DeploymentScheduling(ctx context.Context, namespace, name string) (*DeploymentScheduling, error) {
	u, err := s.dynamic.Resource(deploymentsGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return s.schedulingOf(u)
}

func (s *IntentSeam) schedulingOf(u *unstructured.Unstructured) (*DeploymentScheduling, error) {
	return storedIntent(u, s.Mode, intent.DeploymentAnnotation)
}

// storedIntent is the intent stored in u (nil: none): in annotation mode the
// annotation key, in native mode spec.scheduling. One reader for both kinds.
func storedIntent(u *unstructured.Unstructured, mode IntentMode, key string) (*intent.SchedulingConfiguration, error) {
	if mode == IntentAnnotation {
		return intent.FromAnnotation(u.GetAnnotations(), key)
	}
	raw, found, err := unstructured.NestedFieldNoCopy(u.Object, "spec", "scheduling")
	if err != nil || !found {
		return nil, err
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	return intent.Parse(string(data))
}

// UpdateDeployment reads the Deployment, lets mutate change it and its intent
// (cfg may be set to nil to remove it), and writes it back. Only write
// conflicts (a controller updated the object in between) are retried, with a
// fresh read; an admission rejection is returned, so specs can assert on it.
func (s *IntentSeam) UpdateDeployment(ctx context.Context, namespace, name string, mutate func(d *appsv1.Deployment, cfg **DeploymentScheduling)) (*appsv1.Deployment, error) {
	res := s.dynamic.Resource(deploymentsGVR).Namespace(namespace)
	var out *appsv1.Deployment
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d, err := toDeployment(u)
		if err != nil {
			return err
		}
		cfg, err := s.schedulingOf(u)
		if err != nil {
			return err
		}
		mutate(d, &cfg)
		next, err := s.WithDeploymentScheduling(d, cfg)
		if err != nil {
			return err
		}
		if s.Mode == IntentNative && cfg == nil {
			unstructured.RemoveNestedField(next.Object, "spec", "scheduling")
		}
		updated, err := res.Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		out, err = toDeployment(updated)
		return err
	})
	return out, err
}

func setField(u *unstructured.Unstructured, v any, fields ...string) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var generic map[string]any
	if err := json.Unmarshal(data, &generic); err != nil {
		return err
	}
	return unstructured.SetNestedField(u.Object, generic, fields...)
}

func toDeployment(u *unstructured.Unstructured) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	return d, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d)
}

// --- StatefulSets: the same seam, with KEP-6277's annotation and field.

// WithStatefulSetScheduling returns set carrying cfg, ready to create.
func (s *IntentSeam) WithStatefulSetScheduling(set *appsv1.StatefulSet, cfg *StatefulSetScheduling) (*unstructured.Unstructured, error) {
	set = set.DeepCopy()
	set.APIVersion, set.Kind = "apps/v1", "StatefulSet"
	if s.StatefulSetMode == IntentAnnotation {
		var err error
		if set.Annotations, err = intent.SetAnnotationKey(set.Annotations, intent.StatefulSetAnnotation, cfg); err != nil {
			return nil, err
		}
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(set)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: content}
	if s.StatefulSetMode == IntentNative && cfg != nil {
		if err := setField(u, cfg, "spec", "scheduling"); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// CreateStatefulSet creates set with spec.scheduling cfg (nil: none).
func (s *IntentSeam) CreateStatefulSet(ctx context.Context, set *appsv1.StatefulSet, cfg *StatefulSetScheduling) (*appsv1.StatefulSet, error) {
	u, err := s.WithStatefulSetScheduling(set, cfg)
	if err != nil {
		return nil, err
	}
	created, err := s.dynamic.Resource(statefulSetsGVR).Namespace(set.Namespace).Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	out := &appsv1.StatefulSet{}
	return out, runtime.DefaultUnstructuredConverter.FromUnstructured(created.Object, out)
}

// UpdateStatefulSet reads, mutates and writes a StatefulSet and its intent;
// only write conflicts are retried.
func (s *IntentSeam) UpdateStatefulSet(ctx context.Context, namespace, name string, mutate func(set *appsv1.StatefulSet, cfg **StatefulSetScheduling)) (*appsv1.StatefulSet, error) {
	res := s.dynamic.Resource(statefulSetsGVR).Namespace(namespace)
	out := &appsv1.StatefulSet{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := res.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		set := &appsv1.StatefulSet{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, set); err != nil {
			return err
		}
		cfg, err := storedIntent(u, s.StatefulSetMode, intent.StatefulSetAnnotation)
		if err != nil {
			return err
		}
		mutate(set, &cfg)
		next, err := s.WithStatefulSetScheduling(set, cfg)
		if err != nil {
			return err
		}
		if s.StatefulSetMode == IntentNative && cfg == nil {
			unstructured.RemoveNestedField(next.Object, "spec", "scheduling")
		}
		updated, err := res.Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		return runtime.DefaultUnstructuredConverter.FromUnstructured(updated.Object, out)
	})
	return out, err
}

// DeploymentAnnotation is the annotation that carries a Deployment's intent
// when the seam writes intent as an annotation, and "" in native mode: the
// field a rejection of that intent may name (see Rejection.Annotation).
func (s *IntentSeam) DeploymentAnnotation() string {
	if s.Mode == IntentAnnotation {
		return intent.DeploymentAnnotation
	}
	return ""
}

// StatefulSetAnnotation is DeploymentAnnotation for StatefulSets.
func (s *IntentSeam) StatefulSetAnnotation() string {
	if s.StatefulSetMode == IntentAnnotation {
		return intent.StatefulSetAnnotation
	}
	return ""
}

// StatefulSetScheduling reads the stored intent of a StatefulSet (nil: none),
// in the seam's mode: spec.scheduling, or the intent annotation.
func (s *IntentSeam) StatefulSetScheduling(ctx context.Context, namespace, name string) (*StatefulSetScheduling, error) {
	u, err := s.dynamic.Resource(statefulSetsGVR).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return storedIntent(u, s.StatefulSetMode, intent.StatefulSetAnnotation)
}
