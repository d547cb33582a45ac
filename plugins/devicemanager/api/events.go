package api

import (
	"fmt"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// Mount is a host directory mounted into the container.
type Mount struct {
	HostPath      string
	ContainerPath string
	ReadOnly      bool
}

// AllocateDevice is the event that one container request of kubelet's
// Allocate becomes. The device plugin server pushes it and waits; handlers
// fill in Envs, Annotations and Mounts, which become the container's
// response. It is blocking, RevertOnFailure and Forward: a failing handler
// reverts the ones before it and the gRPC call fails.
type AllocateDevice struct {
	*controllerapi.Result

	// ResourceName is the extended resource the devices belong to.
	ResourceName string
	// DeviceIDs are the IDs kubelet asks for, in its order.
	DeviceIDs []string
	// Live is the pod tracker's last LivePods decision, taken before the
	// event was pushed when an allocation held some of DeviceIDs then; nil
	// when there was none yet. The device manager says from it why kubelet
	// hands those devices out again.
	Live *podapi.LivePods

	// TakenOver are the allocations the device manager released because
	// kubelet handed their devices to this request; the memif wiring
	// removes their vswitch side in the same transaction.
	TakenOver []MemifInfo

	// AllocationID is set by the device manager's handler.
	AllocationID string
	// Envs, Annotations and Mounts are filled in by handlers.
	Envs        map[string]string
	Annotations map[string]string
	Mounts      []Mount
}

// NewAllocateDevice returns an event ready to push and wait for.
func NewAllocateDevice(resourceName string, deviceIDs []string) *AllocateDevice {
	return &AllocateDevice{
		Result:       controllerapi.NewResult(),
		ResourceName: resourceName,
		DeviceIDs:    deviceIDs,
		Envs:         map[string]string{},
		Annotations:  map[string]string{},
	}
}

// Spec implements controllerapi.Event: kubelet admits the pod only once
// Allocate answers.
func (*AllocateDevice) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "AllocateDevice", Blocking: true, Admission: true,
		Transaction: controllerapi.RevertOnFailure, Direction: controllerapi.Forward}
}

// String implements controllerapi.Event; envs and annotations are left out
// because they carry the secret. It names at most maxDescribedIDs device
// IDs: it is logged and kept in the event history, and a hostile request
// may send thousands.
func (e *AllocateDevice) String() string {
	if len(e.DeviceIDs) > maxDescribedIDs {
		return fmt.Sprintf("AllocateDevice %s devices=%v ... and %d more", e.ResourceName,
			e.DeviceIDs[:maxDescribedIDs], len(e.DeviceIDs)-maxDescribedIDs)
	}
	return fmt.Sprintf("AllocateDevice %s devices=%v", e.ResourceName, e.DeviceIDs)
}

const maxDescribedIDs = 8
