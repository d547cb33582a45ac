package manager

import (
	"fmt"

	controller "github.com/contivpp/memif-agent/plugins/controller/api"
)

// ReleaseAllocation releases one allocation: one that was never handed to a
// container (see deviceplugin.Hooks.Abandoned), or one of a deleted pod, as
// a follow-up of its DeletePod once the vswitch side is removed. Only the
// device manager pushes and handles it.
type ReleaseAllocation struct {
	AllocationID string
	Reason       string
}

// GetName implements controller.Event.
func (e *ReleaseAllocation) GetName() string { return "ReleaseAllocation" }

// String implements controller.Event.
func (e *ReleaseAllocation) String() string {
	return fmt.Sprintf("ReleaseAllocation %s (%s)", e.AllocationID, e.Reason)
}

// Method implements controller.Event.
func (e *ReleaseAllocation) Method() controller.EventMethodType { return controller.Update }

// IsBlocking implements controller.Event.
func (e *ReleaseAllocation) IsBlocking() bool { return false }

// Done implements controller.Event; the loop logs the outcome.
func (e *ReleaseAllocation) Done(error) {}

// TransactionType implements controller.UpdateEvent.
func (e *ReleaseAllocation) TransactionType() controller.UpdateTransactionType {
	return controller.BestEffort
}

// Direction implements controller.UpdateEvent: removal, vswitch side first.
func (e *ReleaseAllocation) Direction() controller.UpdateDirectionType { return controller.Reverse }

// ReconcileAllocations asks the device manager to collect allocations no
// live pod holds, as a resync does, so that a missed DeletePod does not
// leak a directory or devices until the next resync. The manager pushes it
// every reconcile-period when it has a PodLister.
type ReconcileAllocations struct{}

// GetName implements controller.Event.
func (e *ReconcileAllocations) GetName() string { return "ReconcileAllocations" }

// String implements controller.Event.
func (e *ReconcileAllocations) String() string { return "ReconcileAllocations" }

// Method implements controller.Event.
func (e *ReconcileAllocations) Method() controller.EventMethodType { return controller.Update }

// IsBlocking implements controller.Event.
func (e *ReconcileAllocations) IsBlocking() bool { return false }

// Done implements controller.Event.
func (e *ReconcileAllocations) Done(error) {}

// TransactionType implements controller.UpdateEvent.
func (e *ReconcileAllocations) TransactionType() controller.UpdateTransactionType {
	return controller.BestEffort
}

// Direction implements controller.UpdateEvent.
func (e *ReconcileAllocations) Direction() controller.UpdateDirectionType { return controller.Reverse }
