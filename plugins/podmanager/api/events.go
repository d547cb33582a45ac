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

// GetName implements controllerapi.Event.
func (e *AddPod) GetName() string { return "AddPod" }

// GetAddPod implements AddPodEvent.
func (e *AddPod) GetAddPod() *AddPod { return e }

// String implements controllerapi.Event.
func (e *AddPod) String() string { return "AddPod " + e.Pod.String() }

// Method implements controllerapi.Event.
func (e *AddPod) Method() controllerapi.EventMethodType { return controllerapi.Update }

// IsBlocking implements controllerapi.Event: nobody waits for AddPod.
func (e *AddPod) IsBlocking() bool { return false }

// Done implements controllerapi.Event; the outcome is logged by the loop.
func (e *AddPod) Done(error) {}

// TransactionType implements controllerapi.UpdateEvent: a pod's wiring is best effort,
// and a failure is healed by the next resync.
func (e *AddPod) TransactionType() controllerapi.UpdateTransactionType {
	return controllerapi.BestEffort
}

// Direction implements controllerapi.UpdateEvent.
func (e *AddPod) Direction() controllerapi.UpdateDirectionType { return controllerapi.Forward }

// DeletePod is pushed when a pod is gone from the node (its sandbox and all
// its containers are removed). Handlers run in reverse order, so the vswitch
// side is removed before the socket directory and the devices.
type DeletePod struct {
	Pod Pod
}

// GetName implements controllerapi.Event.
func (e *DeletePod) GetName() string { return "DeletePod" }

// GetDeletePod implements DeletePodEvent.
func (e *DeletePod) GetDeletePod() *DeletePod { return e }

// String implements controllerapi.Event.
func (e *DeletePod) String() string { return "DeletePod " + e.Pod.String() }

// Method implements controllerapi.Event.
func (e *DeletePod) Method() controllerapi.EventMethodType { return controllerapi.Update }

// IsBlocking implements controllerapi.Event.
func (e *DeletePod) IsBlocking() bool { return false }

// Done implements controllerapi.Event.
func (e *DeletePod) Done(error) {}

// TransactionType implements controllerapi.UpdateEvent.
func (e *DeletePod) TransactionType() controllerapi.UpdateTransactionType {
	return controllerapi.BestEffort
}

// Direction implements controllerapi.UpdateEvent.
func (e *DeletePod) Direction() controllerapi.UpdateDirectionType { return controllerapi.Reverse }
