package api

import (
	"context"
	"fmt"
	"time"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// ClaimRequest is one request of a ResourceClaim and the devices the
// scheduler allocated to it on this node. Each request becomes one
// allocation: one socket directory, one secret, one memif per device.
type ClaimRequest struct {
	// Name is the request's name in the claim.
	Name string
	// DeviceIDs are the devices allocated to it, in the claim's order.
	DeviceIDs []string
	// Spec is the claim's MemifConfig for the request (its opaque config
	// for this driver); nil: none, the default network.
	Spec *memifspec.Spec
}

// PreparedRequest is what PrepareClaim made for one request.
type PreparedRequest struct {
	Request string
	Memif   MemifInfo
}

// PrepareClaim is the event kubelet's NodePrepareResources becomes for one
// ResourceClaim: the device manager creates one allocation per request,
// keyed by the claim's UID and bound to the pod the claim is reserved for,
// exactly as AllocateDevice creates one for kubelet's Allocate. Preparing a
// claim already prepared returns what it holds. It is blocking,
// RevertOnFailure and Forward: on failure no allocation of the claim is left.
type PrepareClaim struct {
	*controllerapi.Result

	// ClaimUID, Namespace and Name identify the claim.
	ClaimUID  string
	Namespace string
	Name      string
	// Pod is the pod the claim is reserved for (its namespace is the
	// claim's); empty when the claim names none.
	Pod podapi.Pod
	// Requests are the claim's requests this driver allocated.
	Requests []ClaimRequest

	// Prepared is filled in by the device manager, ordered by request
	// name; Created tells whether this event made them (false: the claim
	// was prepared before).
	Prepared []PreparedRequest
	Created  bool
}

// NewPrepareClaim returns an event ready to push and wait for.
func NewPrepareClaim(claimUID, namespace, name string, pod podapi.Pod, requests []ClaimRequest) *PrepareClaim {
	return &PrepareClaim{
		Result:   controllerapi.NewResult(),
		ClaimUID: claimUID, Namespace: namespace, Name: name,
		Pod: pod, Requests: requests,
	}
}

// Spec implements controllerapi.Event: kubelet starts the pod only once
// NodePrepareResources answers.
func (*PrepareClaim) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "PrepareClaim", Blocking: true, Admission: true,
		Transaction: controllerapi.RevertOnFailure, Direction: controllerapi.Forward}
}

// String implements controllerapi.Event; secrets are never part of it.
func (e *PrepareClaim) String() string {
	names := make([]string, len(e.Requests))
	for i, r := range e.Requests {
		names[i] = fmt.Sprintf("%s=%v", r.Name, r.DeviceIDs)
	}
	return fmt.Sprintf("PrepareClaim %s/%s (uid %s) for pod %s requests %v", e.Namespace, e.Name, e.ClaimUID, e.Pod, names)
}

// UnprepareClaim is the event kubelet's NodeUnprepareResources becomes for
// one claim. The device manager releases the claim's allocations after the
// vswitch side of its pod is removed; a claim holding none (never prepared
// or already released) is not an error.
type UnprepareClaim struct {
	*controllerapi.Result

	ClaimUID  string
	Namespace string
	Name      string
}

// NewUnprepareClaim returns an event ready to push and wait for.
func NewUnprepareClaim(claimUID, namespace, name string) *UnprepareClaim {
	return &UnprepareClaim{Result: controllerapi.NewResult(), ClaimUID: claimUID, Namespace: namespace, Name: name}
}

// Spec implements controllerapi.Event: removal, vswitch side first.
func (*UnprepareClaim) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "UnprepareClaim", Blocking: true,
		Transaction: controllerapi.BestEffort, Direction: controllerapi.Reverse}
}

// String implements controllerapi.Event.
func (e *UnprepareClaim) String() string {
	return fmt.Sprintf("UnprepareClaim %s/%s (uid %s)", e.Namespace, e.Name, e.ClaimUID)
}

// ClaimStatus is what the API server says of a claim the node may hold.
type ClaimStatus struct {
	// Reserved: the claim is reserved for at least one consumer.
	Reserved bool
	// Pod is the one pod the claim is reserved for; empty when it is
	// reserved for none or shared by several.
	Pod podapi.Pod
	// Unread: the driver could not read the claim; it is kept as it is.
	Unread bool
}

// SyncClaims is the event the DRA driver pushes when it starts, with the
// driver's claims as the API server lists them: the device manager releases
// every prepared claim that is gone (deleted while the agent was down, or
// recreated under a new UID) or reserved for no pod any more, and binds an
// unbound claim to the one pod it is reserved for. Only claims prepared
// before ListedAt are judged: one kubelet prepared since then may be
// missing from the list. It is blocking, BestEffort and Reverse (releases
// go vswitch side first).
type SyncClaims struct {
	*controllerapi.Result

	// Claims are the driver's claims by UID, listed at ListedAt.
	Claims   map[string]ClaimStatus
	ListedAt time.Time

	// Released is filled in by the device manager: the UIDs of the claims
	// released, sorted, whose CDI specs the driver removes.
	Released []string
}

// NewSyncClaims returns an event ready to push and wait for.
func NewSyncClaims(claims map[string]ClaimStatus, listedAt time.Time) *SyncClaims {
	return &SyncClaims{Result: controllerapi.NewResult(), Claims: claims, ListedAt: listedAt}
}

// Spec implements controllerapi.Event: removal, vswitch side first.
func (*SyncClaims) Spec() controllerapi.EventSpec {
	return controllerapi.EventSpec{Name: "SyncClaims", Blocking: true,
		Transaction: controllerapi.BestEffort, Direction: controllerapi.Reverse}
}

// String implements controllerapi.Event.
func (e *SyncClaims) String() string {
	return fmt.Sprintf("SyncClaims (%d claims listed at %s)", len(e.Claims), e.ListedAt.Format(time.RFC3339))
}

// ClaimPool is what the DRA driver publishes: the devices handed out
// through ResourceClaims and where their socket directories live.
type ClaimPool struct {
	// Devices are the claim device IDs (claim-device-count of them).
	Devices []string
	// SocketRoot is the host directory holding the allocation directories;
	// ContainerDir is where a container sees its own.
	SocketRoot   string
	ContainerDir string
}

// ClaimRef names a claim the node prepared.
type ClaimRef struct {
	UID       string
	Namespace string
	Name      string
}

// PreparedClaimsSource tells the DRA driver which claims the node holds,
// so that at start it reads those claims by name instead of listing every
// claim of the cluster. Its method is safe from any goroutine.
type PreparedClaimsSource interface {
	// PreparedClaims returns one ClaimRef per prepared claim, sorted by
	// UID, once the checkpoint is restored (the startup resync); it fails
	// when ctx ends first. Namespace and Name are empty for a claim
	// prepared before the checkpoint kept them.
	PreparedClaims(ctx context.Context) ([]ClaimRef, error)
}
