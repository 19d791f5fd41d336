// Package builder provides fluent builders for the Kubernetes objects the
// workload-aware scheduling conformance harness creates: Pods, Deployments,
// StatefulSets and the scheduling.k8s.io/v1beta1 Workload and PodGroup kinds.
//
// The style follows Kueue's pkg/util/testing wrappers and JobSet's test
// builders:
//
//   - a constructor takes the object's name (and namespace for namespaced
//     kinds) and returns a wrapper holding an object with sensible defaults;
//   - every option mutates the wrapped object and returns the wrapper, so calls
//     chain;
//   - Obj() returns a deep copy, so one wrapper can stamp out several
//     independent objects, and later options never alias earlier results.
//
// The wrappers embed the object they build, so a test can also reach any field
// directly (w.Spec.Foo = ...) when no option exists for it.
//
// The builders do not validate: they will happily build objects the API server
// rejects (two topology constraints, a claim with both sources set, ...), which
// is what negative tests need. TypeMeta is left empty, as typed clients do not
// need it. The package makes no client calls.
//
// Pod template options are shared rather than duplicated: DeploymentWrapper and
// StatefulSetWrapper expose PodTemplate(func(*PodWrapper)), which runs any
// PodWrapper option against the workload's pod template. The few template
// options they expose directly (Request, SchedulingGroup) are shorthands for it.
package builder

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// setLabel sets key=value in the object's labels, allocating the map if needed.
func setLabel(m *metav1.ObjectMeta, key, value string) {
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels[key] = value
}

// setAnnotation sets key=value in the object's annotations, allocating the map
// if needed.
func setAnnotation(m *metav1.ObjectMeta, key, value string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[key] = value
}

// stringPtrOrNil returns nil for "" and a pointer to s otherwise. Claim sources
// use it so that an empty argument leaves the field unset.
func stringPtrOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
