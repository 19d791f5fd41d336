// Package controllers will hold the reference implementation of KEP-6276
// (Deployment) and KEP-6277 (StatefulSet): the upstream k8s.io/kubernetes v1.37.2
// Deployment, ReplicaSet and StatefulSet controllers imported as libraries, with
// the KEPs' Workload and PodGroup handling layered in at the seams the KEPs name.
//
// It is empty until those issues land; the harness already runs the stock
// kube-controller-manager so that the suites have a real control plane to talk to.
package controllers
