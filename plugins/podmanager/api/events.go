package api

import (
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
)

// AddPodEvent is *AddPod, or an event that embeds it to change how it is
// processed (for example its transaction type). A handler that matches
// this type handles both.
type AddPodEvent interface {
	controllerapi.Event
	GetAddPod() *AddPod
}

// DeletePodEvent is *DeletePod, or an event that embeds it; see AddPodEvent.
type DeletePodEvent interface {
	controllerapi.Event
	GetDeletePod() *DeletePod
}

// AddPod is pushed when a pod appears on the node (kubelet admitted it, or
// its sandbox or one of its containers is seen), and again whenever what is
// known of it grows (a new container, device IDs from kubelet): handlers
// treat a repeat as an update of the same pod. Handlers build what the pod
// needs, in order.
type AddPod struct {
	Pod Pod
	// Containers is what is known of the pod's containers when the event
	// is pushed; handlers bind allocations to the pod from it.
	Containers []PodContainer
}

// Spec implements controllerapi.Event: a pod's wiring is best effort, and a
// failure is healed by the next resync.
func (*AddPod) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "AddPod",
		Transaction: controllerapi.BestEffort, Direction: controllerapi.Forward}
}

// GetAddPod implements AddPodEvent.
func (e *AddPod) GetAddPod() *AddPod { return e }

// String implements controllerapi.Event.
func (e *AddPod) String() string { return "AddPod " + e.Pod.String() }

// DeletePod is pushed when a pod is gone from the node (its sandbox and all
// its containers are removed). Handlers run in reverse order, so the vswitch
// side is removed before the socket directory and the devices.
type DeletePod struct {
	Pod Pod
}

// Spec implements controllerapi.Event.
func (*DeletePod) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "DeletePod",
		Transaction: controllerapi.BestEffort, Direction: controllerapi.Reverse}
}

// GetDeletePod implements DeletePodEvent.
func (e *DeletePod) GetDeletePod() *DeletePod { return e }

// String implements controllerapi.Event.
func (e *DeletePod) String() string { return "DeletePod " + e.Pod.String() }
