package api

import (
	"github.com/contivpp/memif-agent/plugins/controller/api"
)

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

// GetName implements api.Event.
func (e *AddPod) GetName() string { return "AddPod" }

// GetPod returns the pod. Handlers that match pod events by name and this
// method also handle events that embed *AddPod to change how it is
// processed (for example its transaction type).
func (e *AddPod) GetPod() Pod { return e.Pod }

// String implements api.Event.
func (e *AddPod) String() string { return "AddPod " + e.Pod.String() }

// Method implements api.Event.
func (e *AddPod) Method() api.EventMethodType { return api.Update }

// IsBlocking implements api.Event: nobody waits for AddPod.
func (e *AddPod) IsBlocking() bool { return false }

// Done implements api.Event; the outcome is logged by the loop.
func (e *AddPod) Done(error) {}

// TransactionType implements api.UpdateEvent: a pod's wiring is best effort,
// and a failure is healed by the next resync.
func (e *AddPod) TransactionType() api.UpdateTransactionType { return api.BestEffort }

// Direction implements api.UpdateEvent.
func (e *AddPod) Direction() api.UpdateDirectionType { return api.Forward }

// DeletePod is pushed when a pod is gone from the node (its sandbox and all
// its containers are removed). Handlers run in reverse order, so the vswitch
// side is removed before the socket directory and the devices.
type DeletePod struct {
	Pod Pod
}

// GetName implements api.Event.
func (e *DeletePod) GetName() string { return "DeletePod" }

// GetPod returns the pod; see AddPod.GetPod.
func (e *DeletePod) GetPod() Pod { return e.Pod }

// String implements api.Event.
func (e *DeletePod) String() string { return "DeletePod " + e.Pod.String() }

// Method implements api.Event.
func (e *DeletePod) Method() api.EventMethodType { return api.Update }

// IsBlocking implements api.Event.
func (e *DeletePod) IsBlocking() bool { return false }

// Done implements api.Event.
func (e *DeletePod) Done(error) {}

// TransactionType implements api.UpdateEvent.
func (e *DeletePod) TransactionType() api.UpdateTransactionType { return api.BestEffort }

// Direction implements api.UpdateEvent.
func (e *DeletePod) Direction() api.UpdateDirectionType { return api.Reverse }
