package kubeletdriver

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/dradriver/claimprefetch"
	"github.com/contivpp/memif-agent/plugins/dradriver/claims"
)

// Claims prepared ahead of kubelet. kubelet asks to prepare a pod's claims
// only once it has admitted the pod and mounted its volumes (kuberuntime's
// SyncPod, after WaitForAttachAndMount), while the driver reads each claim
// as soon as its pod is bound (claimprefetch). So the driver prepares the
// claim right then, exactly as kubelet's call would (the device manager's
// durable writes, the memif wiring, the CDI spec), and kubelet's
// NodePrepareResources picks up the answer: the pod's start no longer
// waits for the disk. A call that comes while its claim is still being
// prepared ahead waits for that; a call whose claim was not prepared
// ahead, or failed to be, prepares it itself.
//
// Whose claim it is to unprepare goes by who made it. The driver prepares
// ahead only a claim the device manager does not hold yet and kubelet has
// not asked for since the driver started: such a claim is the driver's
// until kubelet asks for it, and kubelet's from then on (kubelet
// unprepares what it asked to prepare). A claim of the driver's whose pod
// ended (deleted, or Failed as after a refused admission) is released by
// the driver, for kubelet never unprepares a claim it did not ask for, and
// no container can be using it. A claim the device manager held already
// (prepared by kubelet before the agent's restart, or ahead by the agent
// before it) is left to kubelet, and to the claims' sync at the agent's
// next start.

// aheadClaims are the claims prepared ahead that kubelet has not asked for
// yet, by claim UID, and what keeps the driver from preparing ahead, or
// releasing, a claim that is not its own.
type aheadClaims struct {
	mu    sync.Mutex
	byUID map[types.UID]*aheadClaim
	// asked are the claims kubelet asked to prepare, until it unprepares
	// them.
	asked map[types.UID]bool
	// ended are the pods that ended lately, with when: a read that raced
	// with its pod's end is not prepared. Each is kept for endedMemory.
	ended map[types.UID]time.Time
}

// endedMemory is how long a pod's end keeps its claims from being
// prepared ahead: far longer than a read takes to reach the driver.
const endedMemory = time.Minute

// aheadClaim is one claim prepared, or being prepared, ahead of kubelet.
type aheadClaim struct {
	pod   types.UID
	claim kubeletplugin.NamespacedObject
	// done is closed when the prepare ended; devices and err are its
	// answer. A failed prepare may have left an allocation (its CDI spec
	// not written), so it is released like any other.
	done    chan struct{}
	devices []kubeletplugin.Device
	err     error
}

var _ claimprefetch.Observer = (*Driver)(nil)

// ClaimRead implements claimprefetch.Observer: a claim of this driver read
// as its pod was bound is prepared at once when the device manager does
// not hold it yet and kubelet has not asked for it, unless the driver has
// handed its calls over to a replacing agent, which prepares what kubelet
// asks.
func (d *Driver) ClaimRead(ctx context.Context, pod types.UID, claim *resourceapi.ResourceClaim) {
	if !d.allocatedHere(claim) {
		return
	}
	d.forward.inUse.RLock()
	defer d.forward.inUse.RUnlock()
	if d.forward.successor != "" {
		return
	}
	entry := d.ahead.start(pod, claim)
	if entry == nil {
		return
	}
	if d.holds(ctx, claim.UID) {
		d.ahead.drop(claim.UID, entry)
		return
	}
	entry.devices, entry.err = d.prepare(ctx, claim)
	close(entry.done)
	if entry.err != nil {
		d.log.InfoS("preparing a claim ahead of kubelet failed: kubelet's call prepares it again", "claim", claim.Namespace+"/"+claim.Name, "claimUID", claim.UID, "err", entry.err)
		return
	}
	d.log.DebugS("prepared a claim ahead of kubelet", "claim", claim.Namespace+"/"+claim.Name, "claimUID", claim.UID, "pod", pod)
}

// holds says whether the device manager holds the claim with uid, or
// cannot tell.
func (d *Driver) holds(ctx context.Context, uid types.UID) bool {
	prepared, err := d.cfg.Claims.PreparedClaims(ctx)
	return err != nil || slices.ContainsFunc(prepared, func(ref dmapi.ClaimRef) bool { return ref.UID == string(uid) })
}

// PodEnded implements claimprefetch.Observer: the claims the driver
// prepared ahead for pod, and kubelet never asked for, are released, their
// CDI specs removed. It runs on the watch's goroutine, and blocks only for
// a pod that ended before kubelet asked, the rare case.
func (d *Driver) PodEnded(ctx context.Context, pod *corev1.Pod) {
	entries := d.ahead.end(pod.UID)
	if len(entries) == 0 {
		return
	}
	d.forward.inUse.RLock()
	defer d.forward.inUse.RUnlock()
	for _, entry := range entries {
		select {
		case <-entry.done:
		case <-ctx.Done():
			return
		}
		if errors.Is(entry.err, errHeldBefore) {
			// Taken from the pod as ClaimRead found the claim held: not
			// the driver's.
			continue
		}
		if d.forward.successor != "" {
			d.log.InfoS("a claim prepared ahead of kubelet, whose pod ended before kubelet asked, is left to the claims' sync at the replacing agent's next start",
				"claim", entry.claim.NamespacedName.String(), "claimUID", entry.claim.UID, "pod", pod.Namespace+"/"+pod.Name)
			continue
		}
		if err := d.unprepare(ctx, entry.claim); err != nil {
			d.log.WarnS("releasing a claim prepared ahead of kubelet for a pod that ended before kubelet asked failed: it is released at the agent's next start",
				"claim", entry.claim.NamespacedName.String(), "claimUID", entry.claim.UID, "pod", pod.Namespace+"/"+pod.Name, "err", err)
			continue
		}
		d.log.InfoS("released a claim prepared ahead of kubelet: its pod ended before kubelet asked for it",
			"claim", entry.claim.NamespacedName.String(), "claimUID", entry.claim.UID, "pod", pod.Namespace+"/"+pod.Name)
	}
}

// allocatedHere says whether the scheduler allocated any of claim's
// devices from this driver; claims of other drivers are not prepared
// ahead.
func (d *Driver) allocatedHere(claim *resourceapi.ResourceClaim) bool {
	return claim.Status.Allocation != nil && slices.ContainsFunc(claim.Status.Allocation.Devices.Results,
		func(result resourceapi.DeviceRequestAllocationResult) bool { return result.Driver == d.cfg.DriverName })
}

// start records that claim is being prepared ahead for pod; nil when it
// already is, or was, or kubelet asked for it, or pod ended.
func (a *aheadClaims) start(pod types.UID, claim *resourceapi.ResourceClaim) *aheadClaim {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, known := a.byUID[claim.UID]; known || a.asked[claim.UID] {
		return nil
	}
	if _, ended := a.ended[pod]; ended {
		return nil
	}
	if a.byUID == nil {
		a.byUID = map[types.UID]*aheadClaim{}
	}
	entry := &aheadClaim{
		pod:   pod,
		claim: kubeletplugin.NamespacedObject{UID: claim.UID, NamespacedName: types.NamespacedName{Namespace: claim.Namespace, Name: claim.Name}},
		done:  make(chan struct{}),
	}
	a.byUID[claim.UID] = entry
	return entry
}

// drop removes entry unprepared: the device manager held its claim
// already. A call waiting for it prepares the claim itself.
func (a *aheadClaims) drop(uid types.UID, entry *aheadClaim) {
	a.mu.Lock()
	if a.byUID[uid] == entry {
		delete(a.byUID, uid)
	}
	a.mu.Unlock()
	entry.err = errHeldBefore
	close(entry.done)
}

// errHeldBefore is the error of an entry dropped unprepared.
var errHeldBefore = errors.New("the claim was held before: not prepared ahead")

// take hands kubelet's call the answer prepared ahead for claim, once,
// waiting for a prepare under way, and whether there is one: false when
// none was prepared, it failed, the claim is now shared (the call's own
// prepare refuses it), or ctx ended first (the entry stays for kubelet's
// retry). From the call on the claim is kubelet's: the driver neither
// prepares it ahead nor releases it until kubelet unprepares it (forget).
func (a *aheadClaims) take(ctx context.Context, claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, bool) {
	a.mu.Lock()
	if a.asked == nil {
		a.asked = map[types.UID]bool{}
	}
	a.asked[claim.UID] = true
	a.mu.Unlock()
	entry := a.waitFor(ctx, claim.UID)
	if entry == nil || entry.err != nil || claims.Unshared(claim) != nil {
		return nil, false
	}
	return entry.devices, true
}

// forget is told that kubelet unprepares the claim with uid: a prepare
// ahead under way is waited for (or ctx), and the claim forgotten.
func (a *aheadClaims) forget(ctx context.Context, uid types.UID) {
	a.waitFor(ctx, uid)
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.asked, uid)
}

// waitFor waits for the prepare ahead of the claim with uid and removes
// its entry; nil when there is none, or ctx ended first (the entry stays).
func (a *aheadClaims) waitFor(ctx context.Context, uid types.UID) *aheadClaim {
	a.mu.Lock()
	entry := a.byUID[uid]
	a.mu.Unlock()
	if entry == nil {
		return nil
	}
	select {
	case <-entry.done:
	case <-ctx.Done():
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byUID[uid] != entry {
		return nil
	}
	delete(a.byUID, uid)
	return entry
}

// end records that pod ended, and removes and returns the claims prepared
// ahead for it that kubelet has not asked for.
func (a *aheadClaims) end(pod types.UID) []*aheadClaim {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	for uid, at := range a.ended {
		if now.Sub(at) > endedMemory {
			delete(a.ended, uid)
		}
	}
	if a.ended == nil {
		a.ended = map[types.UID]time.Time{}
	}
	a.ended[pod] = now
	var taken []*aheadClaim
	for uid, entry := range a.byUID {
		if entry.pod == pod && !a.asked[uid] {
			taken = append(taken, entry)
			delete(a.byUID, uid)
		}
	}
	return taken
}
