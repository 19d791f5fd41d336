// Package statefulset will hold the KEP-6277 specs (ids S-*): one Workload and
// one PodGroup for a StatefulSet's whole life, discovery by reference, gang
// only with Parallel. Import it to register them. It is empty until the
// StatefulSet issue lands; `make report` lists its ids as MISSING meanwhile.
package statefulset
