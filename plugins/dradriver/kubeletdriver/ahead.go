package kubeletdriver

import (
	"context"
	"slices"
	"sync"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

	"github.com/contivpp/memif-agent/plugins/dradriver/claimprefetch"
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
// Whose claim it is to unprepare: once kubelet's call has taken a claim,
// kubelet's (it unprepares what it prepared). A claim prepared ahead whose
// pod ended first (deleted from the API server, or Succeeded or Failed
// without kubelet asking, as after a refused admission) is released by the
// driver, for kubelet never unprepares a claim it did not prepare.

// aheadClaims are the claims prepared ahead that no call of kubelet has
// taken yet, by claim UID.
type aheadClaims struct {
	mu    sync.Mutex
	byUID map[types.UID]*aheadClaim
}

// aheadClaim is one claim prepared, or being prepared, ahead of kubelet.
type aheadClaim struct {
	pod   types.UID
	claim kubeletplugin.NamespacedObject
	// done is closed when the prepare ended; devices and err are its
	// answer.
	done    chan struct{}
	devices []kubeletplugin.Device
	err     error
}

var _ claimprefetch.Observer = (*Driver)(nil)

// ClaimRead implements claimprefetch.Observer: a claim of this driver read
// as its pod was bound is prepared at once, unless the driver has handed
// its calls over to a replacing agent, which prepares what kubelet asks.
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
	entry.devices, entry.err = d.prepare(ctx, claim)
	close(entry.done)
	if entry.err != nil {
		d.ahead.drop(claim.UID, entry)
		d.log.InfoS("preparing a claim ahead of kubelet failed: kubelet's call prepares it again", "claim", claim.Namespace+"/"+claim.Name, "claimUID", claim.UID, "err", entry.err)
		return
	}
	d.log.DebugS("prepared a claim ahead of kubelet", "claim", claim.Namespace+"/"+claim.Name, "claimUID", claim.UID, "pod", pod)
}

// PodEnded implements claimprefetch.Observer: the claims prepared ahead for
// pod that kubelet never asked for are released, their CDI specs removed.
func (d *Driver) PodEnded(ctx context.Context, pod types.UID) {
	d.forward.inUse.RLock()
	defer d.forward.inUse.RUnlock()
	for _, entry := range d.ahead.takePod(pod) {
		<-entry.done
		if entry.err != nil || d.forward.successor != "" {
			continue
		}
		if err := d.unprepare(ctx, entry.claim); err != nil {
			d.log.WarnS("releasing a claim prepared ahead of kubelet for a pod that ended before kubelet asked failed: it is released at the agent's next start",
				"claim", entry.claim.NamespacedName.String(), "claimUID", entry.claim.UID, "pod", pod, "err", err)
			continue
		}
		d.log.InfoS("released a claim prepared ahead of kubelet: its pod ended before kubelet asked for it", "claim", entry.claim.NamespacedName.String(), "claimUID", entry.claim.UID, "pod", pod)
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
// already is, or was.
func (a *aheadClaims) start(pod types.UID, claim *resourceapi.ResourceClaim) *aheadClaim {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, known := a.byUID[claim.UID]; known {
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

// drop forgets entry, a prepare ahead that failed.
func (a *aheadClaims) drop(uid types.UID, entry *aheadClaim) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byUID[uid] == entry {
		delete(a.byUID, uid)
	}
}

// take hands kubelet's call the claim prepared ahead with uid, once,
// waiting for a prepare under way: its devices, and whether there are
// any (false: none prepared ahead, it failed, or ctx ended first). From
// then on the claim is kubelet's to unprepare.
func (a *aheadClaims) take(ctx context.Context, uid types.UID) ([]kubeletplugin.Device, bool) {
	a.mu.Lock()
	entry := a.byUID[uid]
	delete(a.byUID, uid)
	a.mu.Unlock()
	if entry == nil {
		return nil, false
	}
	select {
	case <-entry.done:
		return entry.devices, entry.err == nil
	case <-ctx.Done():
		return nil, false
	}
}

// takePod removes and returns the claims prepared ahead for pod.
func (a *aheadClaims) takePod(pod types.UID) []*aheadClaim {
	a.mu.Lock()
	defer a.mu.Unlock()
	var taken []*aheadClaim
	for uid, entry := range a.byUID {
		if entry.pod == pod {
			taken = append(taken, entry)
			delete(a.byUID, uid)
		}
	}
	return taken
}
