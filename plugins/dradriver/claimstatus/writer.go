package claimstatus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/contivpp/memif-agent/internal/logs"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	vswitchapi "github.com/contivpp/memif-agent/plugins/vswitch/api"
)

// SyncPeriod is how often the writer reads the node's state; with VPP's
// link reading (vswitch.conf link-check-period, 1 s) a change is written
// within about 2 s.
const SyncPeriod = 500 * time.Millisecond

// Source is where the writer reads the node's state; everything in it is
// safe from any goroutine and does no I/O.
type Source struct {
	// Allocations lists the device manager's allocations (ListAllocations).
	Allocations func() []dmapi.MemifInfo
	// Links are VPP's links as the vswitch plugin last read them; nil:
	// none.
	Links vswitchapi.LinkReader
	// Vswitch tells whether VPP answers; nil: the agent programs none.
	Vswitch vswitchapi.VswitchAPI
	// Grace is vswitch.conf's link-down-grace.
	Grace time.Duration
}

// Writer writes the status of the node's prepared claims' devices. Run
// it in a goroutine of its owner's; it is not safe for concurrent use.
type Writer struct {
	client       kubernetes.Interface
	driver, pool string
	fieldManager string
	source       Source
	log          logs.Logger

	// built is what the last Build returned, and the claims held but
	// not resolved since; written is what the API server holds of the
	// writer's, by claim UID.
	built, written map[string]Claim
	// failing: the last write failed for a reason worth a retry (logged
	// once until one succeeds). stopped says why the writer writes no
	// more, once it found it cannot (logged once).
	failing bool
	stopped string
}

// NewWriter returns a writer of driver's devices of pool (this node's),
// with field manager driver/node.
func NewWriter(client kubernetes.Interface, driver, node, pool string, source Source, log logs.Logger) *Writer {
	return &Writer{client: client, driver: driver, pool: pool, fieldManager: driver + "/" + node,
		source: source, log: log, built: map[string]Claim{}, written: map[string]Claim{}}
}

// Run writes the claims' status as the node's state changes, every
// SyncPeriod and at each change of VPP's reachability, until ctx ends.
func (w *Writer) Run(ctx context.Context) {
	ticker := time.NewTicker(SyncPeriod)
	defer ticker.Stop()
	for {
		var reachabilityChanged <-chan struct{}
		if w.source.Vswitch != nil {
			_, reachabilityChanged = w.source.Vswitch.Reachability()
		}
		w.Sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-reachabilityChanged:
		}
	}
}

// Sync reads the node's state once and writes what changed: the status of
// each claim whose devices' status changed, and the removal of the
// writer's entries of each claim the node no longer holds (unprepared).
func (w *Writer) Sync(ctx context.Context) {
	node := w.node()
	held := map[string]bool{}
	for _, memif := range node.Allocations {
		if memif.Claim.UID != "" {
			held[memif.Claim.UID] = true
		}
	}
	built := Build(node, w.built)
	for uid, claim := range w.built {
		if _, ok := built[uid]; !ok && held[uid] {
			built[uid] = claim
		}
	}
	w.built = built
	if w.stopped != "" {
		return
	}
	for uid, claim := range built {
		if was, ok := w.written[uid]; (!ok || !was.Equal(claim)) && claim.Ref.Name != "" {
			w.write(ctx, uid, claim)
		}
	}
	for uid, was := range w.written {
		if !held[uid] {
			w.write(ctx, uid, Claim{Ref: was.Ref})
		}
	}
}

func (w *Writer) node() Node {
	node := Node{Allocations: w.source.Allocations(), Grace: w.source.Grace, Now: time.Now()}
	if w.source.Links != nil {
		node.Links = w.source.Links.MemifLinks()
	}
	if w.source.Vswitch != nil {
		node.Vswitch, _ = w.source.Vswitch.Reachability()
	}
	return node
}

// write makes claim's devices the writer's whole part of the claim's
// status (no device: its entries removed) and records the outcome. A
// claim deleted or recreated meanwhile is done with: its next unprepare
// comes; one changed meanwhile (a conflict) is written at the next Sync.
func (w *Writer) write(ctx context.Context, uid string, claim Claim) {
	result, err := w.update(ctx, claim)
	switch {
	case err == nil:
		if w.failing {
			w.log.InfoS("writing ResourceClaim device status again", "driver", w.driver)
			w.failing = false
		}
		if len(claim.Devices) > 0 && !w.holdsDevices(result) {
			w.stop("the API server dropped status.devices: enable its feature gate DRAResourceClaimDeviceStatus to see each memif's addresses and conditions in its claim",
				claim.Ref, nil)
		}
	case errors.Is(err, errClaimGone) || apierrors.IsNotFound(err):
		w.log.DebugS("ResourceClaim device status not written: the claim is gone or recreated", "claim", claimName(claim.Ref), "err", err)
	case apierrors.IsConflict(err):
		w.log.DebugS("ResourceClaim changed while its device status was written: written again", "claim", claimName(claim.Ref), "err", err)
		return
	case apierrors.IsForbidden(err):
		w.stop("the agent may not write ResourceClaim status (RBAC on resourceclaims/status and resourceclaims/driver)", claim.Ref, err)
		return
	case apierrors.IsInvalid(err):
		// The API server's validation or an admission policy (the
		// chart's keeps each agent to its node's pool) refused this
		// status: written again once it changes.
		w.log.WarnS("ResourceClaim device status refused by the API server", "claim", claimName(claim.Ref), "err", err)
	default:
		if !w.failing {
			w.log.WarnS("writing ResourceClaim device status failed: retried", "claim", claimName(claim.Ref), "err", err)
			w.failing = true
		}
		return
	}
	if len(claim.Devices) == 0 {
		delete(w.written, uid)
		return
	}
	w.written[uid] = claim
}

func (w *Writer) stop(why string, ref dmapi.ClaimRef, err error) {
	w.stopped = why
	w.log.WarnS("no ResourceClaim device status written until the agent restarts: "+why, "driver", w.driver, "claim", claimName(ref), "err", err)
}

// holdsDevices tells whether the claim the API server returned holds
// entries of this driver's pool.
func (w *Writer) holdsDevices(result resourceClaimStatus) bool {
	for _, device := range result.devices {
		if device.driver == w.driver && device.pool == w.pool {
			return true
		}
	}
	return false
}

// resourceClaimStatus is what the API server's answer says of the
// devices' status.
type resourceClaimStatus struct {
	devices []deviceKey
}

type deviceKey struct{ driver, pool, device string }

// errClaimGone: the claim of the name is another one (recreated).
var errClaimGone = errors.New("the claim of that name has another UID")

// update reads the claim and updates its status subresource with
// claim's devices in place of the writer's entries, every other entry
// (other drivers', other pools') as read; the claim's resourceVersion
// makes a concurrent change a conflict. Not server-side apply, nor a
// patch: for those the API server re-encodes the claim it holds, and a
// claim whose opaque parameters a protobuf client wrote in another form
// than compact JSON then differs from itself in status.allocation, which
// the API server refuses as a change of an allocation; an update of the
// claim as read (client-go reads and writes built-in types in protobuf)
// keeps their bytes. A claim being deleted or deallocated gets no removal:
// its entries go with it.
func (w *Writer) update(ctx context.Context, claim Claim) (resourceClaimStatus, error) {
	claims := w.client.ResourceV1().ResourceClaims(claim.Ref.Namespace)
	// From the API server's watch cache (resourceVersion 0): no etcd
	// read per write; a stale copy makes the update a conflict, written
	// again at the next Sync.
	current, err := claims.Get(ctx, claim.Ref.Name, metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		return resourceClaimStatus{}, fmt.Errorf("read claim %s: %w", claimName(claim.Ref), err)
	}
	if string(current.UID) != claim.Ref.UID {
		return resourceClaimStatus{}, fmt.Errorf("claim %s: %w", claimName(claim.Ref), errClaimGone)
	}
	devices := slices.DeleteFunc(slices.Clone(current.Status.Devices), func(d resourcev1.AllocatedDeviceStatus) bool {
		return d.Driver == w.driver && d.Pool == w.pool
	})
	removes := len(devices) != len(current.Status.Devices)
	if len(claim.Devices) == 0 && (!removes || current.DeletionTimestamp != nil || current.Status.Allocation == nil) {
		return resourceClaimStatus{}, nil
	}
	for _, d := range claim.Devices {
		device, err := w.deviceStatus(d)
		if err != nil {
			return resourceClaimStatus{}, fmt.Errorf("status of device %s of claim %s: %w", d.Device, claimName(claim.Ref), err)
		}
		devices = append(devices, device)
	}
	current.Status.Devices = devices
	result, err := claims.UpdateStatus(ctx, current, metav1.UpdateOptions{FieldManager: w.fieldManager})
	if err != nil {
		return resourceClaimStatus{}, fmt.Errorf("update the status of claim %s: %w", claimName(claim.Ref), err)
	}
	var got resourceClaimStatus
	for _, device := range result.Status.Devices {
		got.devices = append(got.devices, deviceKey{device.Driver, device.Pool, device.Device})
	}
	return got, nil
}

// deviceStatus is d as the claim's status shows it: memif.json's entry
// as data and, for a memif in an l3 network, its addresses.
func (w *Writer) deviceStatus(d Device) (resourcev1.AllocatedDeviceStatus, error) {
	device := resourcev1.AllocatedDeviceStatus{Driver: w.driver, Pool: w.pool, Device: d.Device,
		Conditions: []metav1.Condition{condition(ConditionReady, d.Ready), condition(ConditionLinkUp, d.LinkUp)}}
	if d.Entry == nil {
		return device, nil
	}
	data, err := json.Marshal(d.Entry)
	if err != nil {
		return resourcev1.AllocatedDeviceStatus{}, fmt.Errorf("encode its memif.json entry: %w", err)
	}
	device.Data = &runtime.RawExtension{Raw: data}
	var network resourcev1.NetworkDeviceData
	for _, ip := range d.Entry.IPs {
		network.IPs = append(network.IPs, ip.String())
	}
	network.HardwareAddress = d.Entry.MAC
	if len(network.IPs) > 0 || network.HardwareAddress != "" {
		device.NetworkData = &network
	}
	return device, nil
}

func condition(kind string, c Condition) metav1.Condition {
	return metav1.Condition{Type: kind, Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransitionTime: metav1.NewTime(c.Since)}
}

func claimName(ref dmapi.ClaimRef) string {
	return ref.Namespace + "/" + ref.Name
}
