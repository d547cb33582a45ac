package api

import (
	"context"
	"errors"
	"fmt"
	"time"

	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// MemifInfo is what one allocation gives one container: a socket directory
// on the host, mounted into the container, where the vswitch side listens
// as memif master, and the shared secret both sides present.
type MemifInfo struct {
	// AllocationID names the allocation; it is also the name of its socket
	// directory under the socket root.
	AllocationID string
	// DeviceIDs are the kubelet device IDs the allocation holds. The socket
	// carries one memif per device, with memif IDs 0..len(DeviceIDs)-1.
	DeviceIDs []string
	// Pod and PodUID are the pod the allocation is bound to; empty until
	// the binding is known (kubelet's Allocate carries no pod identity).
	Pod    podapi.PodID
	PodUID string
	// ContainerName is the container in Pod that holds the allocation, when
	// known.
	ContainerName string
	// HostDir is the allocation's socket directory on the host.
	HostDir string
	// HostSocket is the socket file path on the host (the vswitch side).
	HostSocket string
	// ContainerSocket is the socket file path inside the container
	// (MEMIF_SOCKET).
	ContainerSocket string
	// Secret is the memif shared secret (MEMIF_SECRET). Never log it.
	Secret string
	// AllocatedAt is when kubelet's Allocate created the allocation.
	AllocatedAt time.Time
	// Networks are what the allocation's memifs got from the node's
	// networks, by memif ID, once the memif wiring resolved them.
	Networks []MemifNetwork
	// Claim and Request name the ResourceClaim request the allocation was
	// prepared for; empty for kubelet's Allocate. Claim's Namespace and
	// Name are empty when a checkpoint from before they were kept holds it.
	Claim   ClaimRef
	Request string
}

// String describes the allocation for logs, with the secret masked.
func (m MemifInfo) String() string {
	secret := ""
	if m.Secret != "" {
		secret = "***"
	}
	return fmt.Sprintf("memif %s devices=%v pod=%s container=%q socket=%s secret=%s",
		m.AllocationID, m.DeviceIDs, m.Pod, m.ContainerName, m.HostSocket, secret)
}

// ErrNoMemif is matched (errors.Is) by every NoMemifError.
var ErrNoMemif = errors.New("pod has no memif")

// NoMemifError is the answer for a pod that holds no memif allocation: a
// distinct, typed answer rather than an empty value.
type NoMemifError struct {
	Pod podapi.PodID
}

// Error implements error.
func (e *NoMemifError) Error() string {
	return fmt.Sprintf("pod %s has no memif allocation", e.Pod)
}

// Is makes errors.Is(err, ErrNoMemif) true.
func (e *NoMemifError) Is(target error) bool { return target == ErrNoMemif }

// AllocationChangeKind says what happened to an allocation.
type AllocationChangeKind int

const (
	// Allocated: kubelet's Allocate created the allocation.
	Allocated AllocationChangeKind = iota
	// Bound: the allocation's pod became known.
	Bound
	// Released: the allocation was removed (pod gone or collected).
	Released
)

// String returns the change name.
func (k AllocationChangeKind) String() string {
	switch k {
	case Allocated:
		return "allocated"
	case Bound:
		return "bound"
	case Released:
		return "released"
	}
	return "unknown"
}

// AllocationChange is one change seen by watchers.
type AllocationChange struct {
	Kind  AllocationChangeKind
	Memif MemifInfo
}

// DeviceManagerAPI is what sibling plugins and the node-local API read from
// the device manager. Every method is safe to call from any goroutine; only
// those that say so are safe on the controller event loop, which must never
// wait on I/O.
type DeviceManagerAPI interface {
	// BoundPodMemifs returns the memifs bound to the pod, ordered by
	// container name, or a *NoMemifError. Safe on the event loop: it reads
	// the device manager's state only, so an allocation whose pod the loop
	// has not bound yet is not in it. Event handlers use it.
	BoundPodMemifs(pod podapi.PodID) ([]MemifInfo, error)
	// GetPodMemifInfo returns the pod's memif. A pod with several memif
	// containers gets the first by container name. A pod without one gets a
	// *NoMemifError. Like GetPodMemifs it may ask the runtime and kubelet
	// about a pod just admitted (I/O): not for use on the event loop.
	GetPodMemifInfo(pod podapi.PodID) (MemifInfo, error)
	// GetPodMemifs returns every memif of the pod, ordered by container name,
	// or a *NoMemifError. When no allocation is bound to the pod yet, it may
	// ask the runtime and kubelet about the pod, just admitted, and answer
	// with the unbound allocations they prove it holds. Before the startup
	// resync has restored the checkpoint it waits for the restore. That is
	// I/O: not for use on the event loop (use BoundPodMemifs there).
	GetPodMemifs(pod podapi.PodID) ([]MemifInfo, error)
	// ListAllocations returns every allocation, bound or not, ordered by
	// AllocationID. Safe on the event loop: it reads the state only.
	ListAllocations() []MemifInfo
	// WatchAllocations sends every change to changes until ctx ends. The
	// device manager never blocks on a slow watcher: when changes is full
	// the watcher is dropped and changes is closed, so the watcher knows to
	// list again.
	WatchAllocations(ctx context.Context, changes chan<- AllocationChange)
}
