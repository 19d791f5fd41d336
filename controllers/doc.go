// Package controllers is the reference implementation of KEP-6276 (Deployment)
// and KEP-6277 (StatefulSet): the upstream k8s.io/kubernetes Deployment,
// ReplicaSet and StatefulSet controllers imported as libraries, with the KEPs'
// Workload and PodGroup handling layered in at the seams the KEPs name
// (wrapped clientsets and pod control), plus the admission webhook.
//
//   - deployment, statefulset: the KEPs' hooks and their work queues
//   - admission: the validating webhook (what the KEPs put in kube-apiserver)
//   - ownerguard, objcache, queue, cascade, schedulingapi: what both share
//   - events, features: the event reasons and gates both use
//   - config: RBAC, the webhook registration, the local-cluster add-on
//   - cmd/was-controller-manager: the one binary
//
// The harness (framework/, suites/, pkg/) imports none of this; the contract
// between the two is api/.
package controllers
