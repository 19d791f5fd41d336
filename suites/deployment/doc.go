// Package deployment holds the KEP-6276 specs (ids D-*): a Deployment-owned
// Workload, one ReplicaSet-owned PodGroup per revision, Recreate-only gangs,
// admission, ordering, ownership, DRA, preemption and the benchmark. Import it
// (suites/e2e does) to register them.
package deployment
