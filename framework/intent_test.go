package framework

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workload-aware/apps-harness/api/intent"
)

func TestModeFromSchema(t *testing.T) {
	without := []byte(`{"components":{"schemas":{"io.k8s.api.apps.v1.DeploymentSpec":{"properties":{"replicas":{},"template":{}}}}}}`)
	with := []byte(`{"components":{"schemas":{"io.k8s.api.apps.v1.DeploymentSpec":{"properties":{"replicas":{},"scheduling":{}}}}}}`)
	const spec = "io.k8s.api.apps.v1.DeploymentSpec"
	if m, err := modeFromSchema(without, spec); err != nil || m != IntentAnnotation {
		t.Errorf("1.37 schema: mode %q, %v; want annotation", m, err)
	}
	if m, err := modeFromSchema(with, spec); err != nil || m != IntentNative {
		t.Errorf("schema with spec.scheduling: mode %q, %v; want native", m, err)
	}
	if _, err := modeFromSchema([]byte(`{"components":{"schemas":{}}}`), spec); err == nil {
		t.Error("a schema without DeploymentSpec must be an error, not a guess")
	}
}

func TestSeamWritesTheSameIntentBothWays(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "ns", Annotations: map[string]string{"keep": "me"}}}
	cfg := &DeploymentScheduling{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{}}}

	annotated, err := (&IntentSeam{Mode: IntentAnnotation}).WithDeploymentScheduling(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := intent.FromAnnotations(annotated.GetAnnotations())
	if err != nil || !got.IsGang() {
		t.Errorf("annotation mode: intent %+v, %v", got, err)
	}
	if annotated.GetAnnotations()["keep"] != "me" {
		t.Error("annotation mode dropped an existing annotation")
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(annotated.Object, "spec", "scheduling"); found {
		t.Error("annotation mode wrote spec.scheduling")
	}

	native, err := (&IntentSeam{Mode: IntentNative}).WithDeploymentScheduling(d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedMap(native.Object, "spec", "scheduling", "schedulingPolicy", "gang"); !found {
		t.Errorf("native mode did not write spec.scheduling.schedulingPolicy.gang: %v", native.Object["spec"])
	}
	if _, ok := native.GetAnnotations()[intent.DeploymentAnnotation]; ok {
		t.Error("native mode also wrote the annotation")
	}
	if d.Annotations[intent.DeploymentAnnotation] != "" {
		t.Error("the seam modified its input")
	}
}
