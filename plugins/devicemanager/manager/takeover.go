package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// kubelet is the authority on which pod holds which device, and it hands a
// device to a container only once it has freed it. So an Allocate naming
// devices an allocation holds is not refused: the holder is released and
// the new allocation made, in the same blocking event. Only the reason
// differs, and it is logged and counted, from the pod tracker's last
// LivePods decision (prepareAllocate). Whether the holder's pod is gone is
// the tracker's to decide: a takeover releases the holder alone, and the
// pod's other allocations go on the tracker's DeletePod or LivePods.

// Takeover kinds, the label of the takeovers metric.
const (
	takeoverUnbound      = "unbound"
	takeoverPodGone      = "pod-gone"
	takeoverPodRecreated = "pod-recreated"
	takeoverFreed        = "freed-by-kubelet"
	takeoverStillListed  = "still-listed"
	takeoverNotAsked     = "sources-unknown"
)

// takeover is the release of one allocation whose devices kubelet hands to
// a new request.
type takeover struct {
	holder allocation.Allocation
	kind   string
	reason string
}

// decideTakeover says why kubelet may hand out the devices holder holds,
// from the pod tracker's last LivePods decision (nil: none yet).
func decideTakeover(holder allocation.Allocation, resource string, live *podapi.LivePods) takeover {
	t := takeover{holder: holder}
	switch {
	case !holder.Bound():
		t.kind = takeoverUnbound
		t.reason = "no pod was seen holding it: an init container's devices go on to the app container, or its pod failed admission"
	case live == nil:
		t.kind = takeoverNotAsked
		t.reason = fmt.Sprintf("kubelet frees a device before handing it out again; whether pod %s still runs is not known: the pod tracker has decided nothing yet", holder.Pod)
	default:
		t.kind, t.reason = decideBound(holder, resource, live.Find(holder.Pod))
	}
	return t
}

// decideBound decides for an allocation bound to a pod, given what the
// pod tracker's last decision holds of that pod (nil: it is gone).
func decideBound(holder allocation.Allocation, resource string, pod *podapi.PodState) (kind, reason string) {
	switch {
	case pod == nil:
		return takeoverPodGone, fmt.Sprintf("pod %s (uid %s) is gone in the pod tracker's last decision", holder.Pod, holder.PodUID)
	case holder.PodUID != "" && pod.Pod.UID != "" && pod.Pod.UID != holder.PodUID:
		return takeoverPodRecreated, fmt.Sprintf("pod %s was recreated (uid %s, the allocation's was %s)", holder.Pod, pod.Pod.UID, holder.PodUID)
	case podHoldsAny(pod, resource, holder.DeviceIDs):
		return takeoverStillListed, fmt.Sprintf("the pod tracker's last decision has pod %s alive and holding them, and kubelet hands them out again; kubelet decides", holder.Pod)
	}
	return takeoverFreed, fmt.Sprintf("pod %s is alive without them in the pod tracker's last decision (its containers completed)", holder.Pod)
}

func podHoldsAny(pod *podapi.PodState, resource string, deviceIDs []string) bool {
	for _, container := range pod.Containers {
		for _, id := range container.DeviceIDs[resource] {
			if slices.Contains(deviceIDs, id) {
				return true
			}
		}
	}
	return false
}

// prepareAllocate runs off the event loop before an AllocateDevice is
// pushed: when an allocation holds some of the devices asked for, it
// carries the pod tracker's last LivePods decision in the event, for the
// takeover to say what became of the holder's pod. It asks no pod source.
func (m *Manager) prepareAllocate(_ context.Context, ev *dmapi.AllocateDevice) {
	if len(m.state.Holders(ev.DeviceIDs)) == 0 {
		return
	}
	m.liveMu.Lock()
	defer m.liveMu.Unlock()
	ev.Live = m.live
}

// takenOver are the holders one AllocateDevice released.
type takenOver struct {
	event   *dmapi.AllocateDevice
	holders []allocation.Allocation
}

// takeOver releases the allocations holding devices of ev that kubelet
// hands out again. Their vswitch side is removed in ev's transaction (see
// dmapi.AllocateDevice.TakenOver), their directories in follow-ups once it
// is committed. Should ev fail, restoreTakenOver puts the holders
// back, and the loop drops those follow-ups: VPP still listens in the
// directories. A request with unknown or repeated device IDs is left for
// newAllocation to refuse.
func (m *Manager) takeOver(ev *dmapi.AllocateDevice, ops controllerapi.EventOperations) error {
	m.takenOver = takenOver{event: ev}
	if ev.ResourceName != m.cfg.ResourceName || !errors.Is(m.state.CheckRequest(ev.DeviceIDs), dmapi.ErrDeviceInUse) {
		return nil
	}
	for _, holder := range m.state.Holders(ev.DeviceIDs) {
		t := decideTakeover(holder, m.cfg.ResourceName, ev.Live)
		if _, err := m.state.Remove(holder.ID); err != nil {
			return err
		}
		m.takenOver.holders = append(m.takenOver.holders, holder)
		ev.TakenOver = append(ev.TakenOver, holder.Info())
		m.metrics.countTakeover(t.kind)
		logAt := m.log.InfoS
		if t.kind == takeoverStillListed {
			logAt = m.log.WarnS
		}
		logAt("allocation taken over for kubelet's Allocate", allocationPairs(holder, "allocateDevices", ev.DeviceIDs, "reason", t.reason)...)
		release := &ReleaseAllocation{AllocationID: holder.ID, Reason: "taken over: " + t.reason, removed: &t.holder}
		if err := ops.PushFollowUp(release); err != nil {
			m.log.WarnS("directory of a taken over allocation stays until the next start", "dir", holder.HostDir, "allocation", holder.ID, "err", err)
		}
	}
	return nil
}

// restoreTakenOver puts back the allocations ev took over, as they were:
// ev failed, so kubelet admitted no container with their devices. The
// caller persists the state.
func (m *Manager) restoreTakenOver(ev *dmapi.AllocateDevice) error {
	if m.takenOver.event != ev || len(m.takenOver.holders) == 0 {
		return nil
	}
	holders := m.takenOver.holders
	m.takenOver = takenOver{}
	ev.TakenOver = nil
	var errs []error
	for _, holder := range holders {
		if err := m.state.Add(holder); err != nil {
			errs = append(errs, fmt.Errorf("restore %s, taken over by a failed Allocate of %v: %w", holder.ID, ev.DeviceIDs, err))
			continue
		}
		if err := m.restoreDeviceInfo(holder); err != nil {
			errs = append(errs, fmt.Errorf("restore the device-info files of %s: %w", holder.ID, err))
		}
		m.log.InfoS("allocation restored: the Allocate that took it over failed", allocationPairs(holder, "allocateDevices", ev.DeviceIDs)...)
	}
	return errors.Join(errs...)
}
