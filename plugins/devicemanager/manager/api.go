package manager

import (
	"context"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

var _ dmapi.DeviceManagerAPI = (*Manager)(nil)

// GetPodMemifInfo implements dmapi.DeviceManagerAPI.
func (m *Manager) GetPodMemifInfo(pod podapi.PodID) (dmapi.MemifInfo, error) {
	return m.state.PodMemifInfo(pod)
}

// GetPodMemifs implements dmapi.DeviceManagerAPI.
func (m *Manager) GetPodMemifs(pod podapi.PodID) ([]dmapi.MemifInfo, error) {
	return m.state.PodMemifs(pod)
}

// ListAllocations implements dmapi.DeviceManagerAPI.
func (m *Manager) ListAllocations() []dmapi.MemifInfo { return m.state.ListInfo() }

// WatchAllocations implements dmapi.DeviceManagerAPI; changes is closed when
// ctx ends or when it is full.
func (m *Manager) WatchAllocations(ctx context.Context, changes chan<- dmapi.AllocationChange) {
	m.state.Watch(ctx, changes)
}
