// Package events names the reasons of the events both controllers record on
// the object that opted in (the Deployment or the StatefulSet). Users and the
// e2e suites match on these strings, so they live in one place and the two
// controllers cannot drift apart. Each constant's name is its value.
package events

// The reasons KEP-6277 names ("How can someone using this feature know that
// it is working for their instance?"). KEP-6276 names none; the Deployment
// controller records the same ones for the same cases.
const (
	// WorkloadCreated: the controller created the object's Workload.
	WorkloadCreated = "WorkloadCreated"
	// PodGroupCreated: the controller created a runtime PodGroup.
	PodGroupCreated = "PodGroupCreated"
	// WorkloadCreationFailed: building or creating a Workload or a PodGroup
	// failed (the KEP uses this one reason for both kinds).
	WorkloadCreationFailed = "WorkloadCreationFailed"
)

// Reasons of both controllers that the KEPs do not name.
const (
	// InvalidSchedulingIntent: the scheduling intent cannot be read; the
	// object's pods are scheduled as upstream.
	InvalidSchedulingIntent = "InvalidSchedulingIntent"
)

// Reasons of the Deployment controller only.
const (
	// PodGroupDeleted: a ReplicaSet scaled to zero lost its PodGroup.
	PodGroupDeleted = "PodGroupDeleted"
	// WorkloadNameCollision: a Workload of the Deployment's name exists but
	// another object controls it.
	WorkloadNameCollision = "WorkloadNameCollision"
	// PodGroupNameCollision: a PodGroup of the ReplicaSet's name exists but
	// another object controls it.
	PodGroupNameCollision = "PodGroupNameCollision"
)

// Reasons of the StatefulSet controller only: its discovery of Workloads and
// PodGroups created by a higher-level controller.
const (
	// AmbiguousWorkload: several Workloads name the StatefulSet in
	// spec.controllerRef; none is used.
	AmbiguousWorkload = "AmbiguousWorkload"
	// AmbiguousPodGroup: several PodGroups reference the Workload's template;
	// none is used.
	AmbiguousPodGroup = "AmbiguousPodGroup"
	// UnusableWorkload: the discovered Workload has not exactly one
	// podGroupTemplate.
	UnusableWorkload = "UnusableWorkload"
	// UnresolvedParentWorkload: the parent controller's Workload, or its
	// template, is missing or ambiguous.
	UnresolvedParentWorkload = "UnresolvedParentWorkload"
	// GroupTemplateNameIgnored: the group-template-name annotation is set but
	// there is no parent controller to delegate to.
	GroupTemplateNameIgnored = "GroupTemplateNameIgnored"
)
