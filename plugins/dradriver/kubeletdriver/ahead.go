package kubeletdriver

import (
	"context"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"

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
// ahead, or failed to be, or is no longer reserved for the same one pod,
// prepares it itself.
//
// Whose claim it is to unprepare: once kubelet's call has taken a claim,
// kubelet's (it unprepares what it prepared). A claim prepared ahead whose
// pod ended before any of its containers could start (no sandbox ready,
// no container created: deleted, or Failed as after a refused admission)
// is released by the driver, for kubelet never unprepares a claim it did
// not prepare, and nothing can be using it. A pod that got that far was
// prepared by kubelet (kubelet prepares before it makes the sandbox),
// perhaps before this agent started, so its claim is left to kubelet.

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
	// answer. A failed prepare may have left an allocation (its CDI spec
	// not written), so it is released like any other.
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
		d.log.InfoS("preparing a claim ahead of kubelet failed: kubelet's call prepares it again", "claim", claim.Namespace+"/"+claim.Name, "claimUID", claim.UID, "err", entry.err)
		return
	}
	d.log.DebugS("prepared a claim ahead of kubelet", "claim", claim.Namespace+"/"+claim.Name, "claimUID", claim.UID, "pod", pod)
}

// PodEnded implements claimprefetch.Observer: the claims prepared ahead for
// pod that kubelet never took are released, their CDI specs removed, when
// none of the pod's containers can have started; otherwise they are left
// to kubelet. It runs on the watch's goroutine: it blocks only for a pod
// that ended before kubelet asked, the rare case.
func (d *Driver) PodEnded(ctx context.Context, pod *corev1.Pod) {
	entries := d.ahead.takePod(pod.UID)
	if len(entries) == 0 || podStarted(pod) {
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
		if d.forward.successor != "" {
			return
		}
		if err := d.unprepare(ctx, entry.claim); err != nil {
			d.log.WarnS("releasing a claim prepared ahead of kubelet for a pod that ended before kubelet asked failed: it is released at the agent's next start",
				"claim", entry.claim.NamespacedName.String(), "claimUID", entry.claim.UID, "pod", pod.Namespace+"/"+pod.Name, "err", err)
			continue
		}
		d.log.InfoS("released a claim prepared ahead of kubelet: its pod ended before kubelet asked for it", "claim", entry.claim.NamespacedName.String(), "claimUID", entry.claim.UID, "pod", pod.Namespace+"/"+pod.Name)
	}
}

// podStarted says whether kubelet may have started any of pod's
// containers: its sandbox was ready, or a container was created. kubelet
// prepares a pod's claims before it makes the sandbox.
func podStarted(pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodRunning || pod.Status.Phase == corev1.PodSucceeded {
		return true
	}
	if slices.ContainsFunc(pod.Status.Conditions, func(condition corev1.PodCondition) bool {
		return condition.Type == corev1.PodReadyToStartContainers && condition.Status == corev1.ConditionTrue
	}) {
		return true
	}
	created := func(status corev1.ContainerStatus) bool { return status.ContainerID != "" }
	return slices.ContainsFunc(pod.Status.InitContainerStatuses, created) || slices.ContainsFunc(pod.Status.ContainerStatuses, created)
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

// take hands kubelet's call the answer prepared ahead for claim, once,
// waiting for a prepare under way, and whether there is one: false when
// none was prepared, it failed, the claim is no longer reserved for that
// one pod, or ctx ended first. The claim is then kubelet's to unprepare,
// unless ctx ended: the entry stays for kubelet's retry, and an
// unprepare waits for it (forget).
func (a *aheadClaims) take(ctx context.Context, claim *resourceapi.ResourceClaim) ([]kubeletplugin.Device, bool) {
	entry := a.waitFor(ctx, claim.UID)
	if entry == nil {
		return nil, false
	}
	if entry.err != nil || entry.pod != types.UID(claims.Pod(claim).UID) || claims.Unshared(claim) != nil {
		return nil, false
	}
	return entry.devices, true
}

// forget drops the entry of the claim with uid, once its prepare ended or
// ctx did: kubelet unprepares it.
func (a *aheadClaims) forget(ctx context.Context, uid types.UID) {
	a.waitFor(ctx, uid)
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
