// Package scheduling holds the harness's own specs: they prove that the
// cluster under test schedules Workloads and PodGroups the way the KEP specs
// assume (gang all-or-nothing, quorum, topology domains) before any apps
// controller is involved. Import the package to register the specs.
package scheduling
