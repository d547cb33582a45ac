package manager

import (
	"path/filepath"
	"slices"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/networks/memifjson"
)

var _ dmapi.NetworkRecorder = (*Manager)(nil)

// networksStateName is the memif wiring's file beside the checkpoint.
const networksStateName = "networks.json"

// SetMemifNetworks implements dmapi.NetworkRecorder; the device-info
// files of the allocation's devices take its memifs' modes.
func (m *Manager) SetMemifNetworks(allocationID string, networks []dmapi.MemifNetwork) {
	m.networksMu.Lock()
	if networks == nil {
		delete(m.networks, allocationID)
		m.networksMu.Unlock()
		return
	}
	m.networks[allocationID] = slices.Clone(networks)
	m.networksMu.Unlock()
	m.updateDeviceInfo(allocationID, networks)
}

// withNetworks returns infos with their memifs' networks.
func (m *Manager) withNetworks(infos []dmapi.MemifInfo) []dmapi.MemifInfo {
	m.networksMu.RLock()
	defer m.networksMu.RUnlock()
	for i := range infos {
		infos[i].Networks = slices.Clone(m.networks[infos[i].AllocationID])
	}
	return infos
}

// WriteMemifJSON implements dmapi.NetworkRecorder, through the socket
// root: no link in the allocation's directory is followed.
func (m *Manager) WriteMemifJSON(allocationID string, content []byte) error {
	root, err := m.openSocketRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	dir, err := root.OpenDir(allocationID)
	if err != nil {
		return err
	}
	defer dir.Close()
	return memifjson.Write(dir, content)
}

// NetworksStatePath implements dmapi.NetworkRecorder.
func (m *Manager) NetworksStatePath() string {
	return filepath.Join(filepath.Dir(m.cfg.CheckpointPath), networksStateName)
}
