package manager

import (
	"fmt"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
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

// Spec implements controllerapi.Event: removal, vswitch side first.
func (*ReleaseAllocation) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "ReleaseAllocation",
		Transaction: controllerapi.BestEffort, Direction: controllerapi.Reverse}
}

// String implements controllerapi.Event.
func (e *ReleaseAllocation) String() string {
	return fmt.Sprintf("ReleaseAllocation %s (%s)", e.AllocationID, e.Reason)
}

// ReleaseAbandoned releases every allocation made for one kubelet call
// that then failed or that kubelet stopped waiting for (see
// deviceplugin.Allocator's Abandon): none was handed to a container, nor bound
// or wired. It is one event however many there are, so that the rollback
// of a call cannot fill the queue. Only the device manager pushes and
// handles it.
type ReleaseAbandoned struct {
	AllocationIDs []string
	Reason        string
}

// Spec implements controllerapi.Event: removal.
func (*ReleaseAbandoned) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "ReleaseAbandoned",
		Transaction: controllerapi.BestEffort, Direction: controllerapi.Reverse}
}

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
