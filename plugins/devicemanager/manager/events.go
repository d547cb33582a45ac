package manager

import (
	"fmt"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// ReleaseAllocation releases one allocation of a deleted pod, as a
// follow-up of its DeletePod once the vswitch side is removed, of an
// unprepared claim, or taken over. Only the device manager pushes and
// handles it.
type ReleaseAllocation struct {
	AllocationID string
	Reason       string
	// removed is an allocation a takeover already released; only its
	// directory is left to remove.
	removed *allocation.Allocation
}

// GetName implements controllerapi.Event.
func (e *ReleaseAllocation) GetName() string { return "ReleaseAllocation" }

// String implements controllerapi.Event.
func (e *ReleaseAllocation) String() string {
	return fmt.Sprintf("ReleaseAllocation %s (%s)", e.AllocationID, e.Reason)
}

// Method implements controllerapi.Event.
func (e *ReleaseAllocation) Method() controllerapi.EventMethodType { return controllerapi.Update }

// IsBlocking implements controllerapi.Event.
func (e *ReleaseAllocation) IsBlocking() bool { return false }

// Done implements controllerapi.Event; the loop logs the outcome.
func (e *ReleaseAllocation) Done(error) {}

// TransactionType implements controllerapi.UpdateEvent.
func (e *ReleaseAllocation) TransactionType() controllerapi.UpdateTransactionType {
	return controllerapi.BestEffort
}

// Direction implements controllerapi.UpdateEvent: removal, vswitch side first.
func (e *ReleaseAllocation) Direction() controllerapi.UpdateDirectionType {
	return controllerapi.Reverse
}

// ReleaseAbandoned releases every allocation made for one kubelet call
// that then failed or that kubelet stopped waiting for (see
// deviceplugin.Hooks.Abandoned): none was handed to a container, nor bound
// or wired. It is one event however many there are, so that the rollback
// of a call cannot fill the queue. Only the device manager pushes and
// handles it.
type ReleaseAbandoned struct {
	AllocationIDs []string
	Reason        string
}

// GetName implements controllerapi.Event.
func (e *ReleaseAbandoned) GetName() string { return "ReleaseAbandoned" }

// String implements controllerapi.Event; it names at most
// maxDescribedAllocations, since it is logged and kept in the history.
func (e *ReleaseAbandoned) String() string {
	ids := e.AllocationIDs
	more := ""
	if len(ids) > maxDescribedAllocations {
		ids, more = ids[:maxDescribedAllocations], fmt.Sprintf(" ... and %d more", len(ids)-maxDescribedAllocations)
	}
	return fmt.Sprintf("ReleaseAbandoned %d allocations %v%s (%s)", len(e.AllocationIDs), ids, more, e.Reason)
}

const maxDescribedAllocations = 8

// Method implements controllerapi.Event.
func (e *ReleaseAbandoned) Method() controllerapi.EventMethodType { return controllerapi.Update }

// IsBlocking implements controllerapi.Event.
func (e *ReleaseAbandoned) IsBlocking() bool { return false }

// Done implements controllerapi.Event; the loop logs the outcome.
func (e *ReleaseAbandoned) Done(error) {}

// TransactionType implements controllerapi.UpdateEvent.
func (e *ReleaseAbandoned) TransactionType() controllerapi.UpdateTransactionType {
	return controllerapi.BestEffort
}

// Direction implements controllerapi.UpdateEvent: removal.
func (e *ReleaseAbandoned) Direction() controllerapi.UpdateDirectionType {
	return controllerapi.Reverse
}

// ReconcileAllocations asks the device manager to bind and collect
// allocations by what the pod sources listed, so that a missed DeletePod
// does not leak a directory or devices. The manager lists the pods off the
// event loop and pushes it every reconcile-period, and after every resync,
// when it has a PodLister.
type ReconcileAllocations struct {
	// Live is the listing the pods were compared with.
	Live podapi.Listing
}

// GetName implements controllerapi.Event.
func (e *ReconcileAllocations) GetName() string { return "ReconcileAllocations" }

// String implements controllerapi.Event.
func (e *ReconcileAllocations) String() string { return "ReconcileAllocations" }

// Method implements controllerapi.Event.
func (e *ReconcileAllocations) Method() controllerapi.EventMethodType { return controllerapi.Update }

// IsBlocking implements controllerapi.Event.
func (e *ReconcileAllocations) IsBlocking() bool { return false }

// Done implements controllerapi.Event.
func (e *ReconcileAllocations) Done(error) {}

// TransactionType implements controllerapi.UpdateEvent.
func (e *ReconcileAllocations) TransactionType() controllerapi.UpdateTransactionType {
	return controllerapi.BestEffort
}

// Direction implements controllerapi.UpdateEvent.
func (e *ReconcileAllocations) Direction() controllerapi.UpdateDirectionType {
	return controllerapi.Reverse
}
