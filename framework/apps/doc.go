// Package apps is the one model the suites share of an app — a Deployment or
// a StatefulSet — and of what belongs to it: its Workloads, its PodGroups,
// its ReplicaSets and its pods.
//
//   - App names the app; Workloads, ReplicaSets, PodGroupsReferencing and
//     TheWorkload/ThePodGroup find what belongs to it, by the link each KEP
//     defines (discovery never reconstructs a name).
//   - State is everything a spec asserts on, as one value that prints whole
//     when a wait fails; Read takes it, WaitForState and KeepsState poll it.
//   - Named waits and matchers say what they wait for, in the style of
//     Kueue's and JobSet's test utilities: WaitForGang, WaitForUngrouped,
//     WaitForMinCounts, WaitForPodsCreated.
//   - ExpectOwner and ExpectPodsInGroup check ownerReferences; ExpectSameObjects
//     and ExpectPodsUndisturbed compare two States.
//   - Scale and TryScale change spec.replicas through the intent seam;
//     TryScaleSubresource goes through /scale.
package apps
