// Package statefulset holds the KEP-6277 specs (ids S-*): one Workload and one
// PodGroup for a StatefulSet's whole life, discovery by reference, gang only
// with Parallel, admission, user-provided objects, composition by parents, DRA
// and preemption. Import it (suites/e2e does) to register them.
package statefulset
