// Package deployment will hold the KEP-6276 specs (ids D-*): a Deployment-owned
// Workload, one ReplicaSet-owned PodGroup per revision, Recreate-only gangs.
// Import it to register them. It is empty until the Deployment issue lands;
// `make report` lists its ids as MISSING meanwhile.
package deployment
