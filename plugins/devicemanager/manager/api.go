package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

var _ dmapi.DeviceManagerAPI = (*Manager)(nil)

// BoundPodMemifs implements dmapi.DeviceManagerAPI: the state only, no I/O.
func (m *Manager) BoundPodMemifs(pod podapi.PodID) ([]dmapi.MemifInfo, error) {
	infos, err := m.state.PodMemifs(pod)
	return m.withNetworks(infos), err
}

// GetPodMemifInfo implements dmapi.DeviceManagerAPI.
func (m *Manager) GetPodMemifInfo(pod podapi.PodID) (dmapi.MemifInfo, error) {
	infos, err := m.GetPodMemifs(pod)
	if err != nil {
		return dmapi.MemifInfo{}, err
	}
	return infos[0], nil
}

// GetPodMemifs implements dmapi.DeviceManagerAPI; for a pod holding no
// bound allocation it asks the PodResolver, which may take LookupTimeout.
// Called before the startup resync has restored the checkpoint, it waits
// for the restore (LookupTimeout at most).
func (m *Manager) GetPodMemifs(pod podapi.PodID) ([]dmapi.MemifInfo, error) {
	if err := m.awaitRestored(); err != nil {
		return nil, err
	}
	infos, err := m.state.PodMemifs(pod)
	if errors.Is(err, dmapi.ErrNoMemif) && m.opts.PodResolver != nil {
		if admitted := m.resolveAdmitted(pod); len(admitted) > 0 {
			return m.withNetworks(admitted), nil
		}
		// The event loop can bind them while the resolver asks the
		// runtime and kubelet: the resolver's answer then skips them.
		infos, err = m.state.PodMemifs(pod)
	}
	return m.withNetworks(infos), err
}

// awaitRestored waits until the startup resync has restored the
// checkpoint, LookupTimeout at most.
func (m *Manager) awaitRestored() error {
	timeout := time.NewTimer(m.opts.LookupTimeout)
	defer timeout.Stop()
	select {
	case <-m.restored:
		return nil
	case <-timeout.C:
		return fmt.Errorf("look up memifs: the checkpoint is not restored yet (no startup resync within %s; is the controller's event loop running?): try again", m.opts.LookupTimeout)
	}
}

// resolveAdmitted asks the resolver what is known of a pod the event loop
// has not bound yet and returns the unbound allocations it proves to hold.
func (m *Manager) resolveAdmitted(pod podapi.PodID) []dmapi.MemifInfo {
	ctx, cancel := context.WithTimeout(context.Background(), m.opts.LookupTimeout)
	defer cancel()
	state, found, err := m.opts.PodResolver.ResolvePod(ctx, pod)
	if err != nil {
		m.log.WarnS("resolving a pod for its memifs failed", "pod", pod, "err", err)
		return nil
	}
	if !found {
		return nil
	}
	return m.state.Resolve(state.Pod, state.Containers)
}

// ListAllocations implements dmapi.DeviceManagerAPI.
func (m *Manager) ListAllocations() []dmapi.MemifInfo { return m.withNetworks(m.state.ListInfo()) }

// WatchAllocations implements dmapi.DeviceManagerAPI; changes is closed when
// ctx ends or when it is full.
func (m *Manager) WatchAllocations(ctx context.Context, changes chan<- dmapi.AllocationChange) {
	m.state.Watch(ctx, changes)
}
