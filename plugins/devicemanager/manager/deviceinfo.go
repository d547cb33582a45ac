package manager

import (
	"errors"
	"slices"

	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/deviceinfo"
)

// The device-info files (package deviceinfo) follow kubelet's
// allocations: written before Allocate answers, removed with the
// allocation's directory once no allocation holds the device, written
// again with each memif's mode when the memif wiring tells it
// (SetMemifNetworks), and at the first resync made whole for every held
// device and removed for every other. A claim's devices have none: the
// spec's files are a device plugin's.

// deviceInfoOf is the device-info of each of a's devices: device i is
// memif ID i on a's socket, in the mode networks (the memif wiring's, by
// memif ID) give it, ethernet until then.
func deviceInfoOf(a allocation.Allocation, networks []dmapi.MemifNetwork) []deviceinfo.Device {
	devices := make([]deviceinfo.Device, len(a.DeviceIDs))
	for i, id := range a.DeviceIDs {
		mode := deviceinfo.ModeEthernet
		at := slices.IndexFunc(networks, func(n dmapi.MemifNetwork) bool { return n.MemifID == uint32(i) })
		if at >= 0 && (networks[at].Mode == deviceinfo.ModeIP || networks[at].Mode == deviceinfo.ModeEthernet) {
			mode = networks[at].Mode
		}
		devices[i] = deviceinfo.Device{ID: id, Info: deviceinfo.NewMemif(a.ContainerSocket, mode)}
	}
	return devices
}

// writeDeviceInfo writes the files of a new allocation of kubelet's; on
// failure none of them is left.
func (m *Manager) writeDeviceInfo(a allocation.Allocation) error {
	return m.deviceInfo.Write(deviceInfoOf(a, nil))
}

// updateDeviceInfo writes again the files of allocationID, if kubelet's,
// with the modes the memif wiring resolved.
func (m *Manager) updateDeviceInfo(allocationID string, networks []dmapi.MemifNetwork) {
	a, held := m.state.Get(allocationID)
	if !held || a.ClaimUID != "" || !m.deviceInfo.Enabled() {
		return
	}
	if err := m.deviceInfo.Write(deviceInfoOf(a, networks)); err != nil {
		m.metrics.countError("device-info")
		m.log.ErrorS(err, "device-info files not updated with the memifs' modes: written again at the next change", allocationPairs(a)...)
	}
}

// restoreDeviceInfo writes again the files of a, an allocation a failed
// Allocate took over and put back.
func (m *Manager) restoreDeviceInfo(a allocation.Allocation) error {
	if a.ClaimUID != "" {
		return nil
	}
	m.networksMu.RLock()
	networks := m.networks[a.ID]
	m.networksMu.RUnlock()
	return m.deviceInfo.Write(deviceInfoOf(a, networks))
}

// removeDeviceInfo removes the files of a's devices that no allocation
// holds any more: a takeover's new allocation keeps them.
func (m *Manager) removeDeviceInfo(a allocation.Allocation) error {
	if a.ClaimUID != "" || !m.deviceInfo.Enabled() {
		return nil
	}
	var free []string
	for _, id := range a.DeviceIDs {
		if len(m.state.Holders([]string{id})) == 0 {
			free = append(free, id)
		}
	}
	if err := m.deviceInfo.Remove(free); err != nil {
		m.metrics.countError("device-info")
		return err
	}
	return nil
}

// ensureDeviceInfo makes the files of every held device whole (a file a
// reboot emptied, or a write a crash cut short) and removes those of the
// devices no allocation holds (released while the agent was down, or
// before a crash removed their files). It runs at the first resync.
func (m *Manager) ensureDeviceInfo() error {
	if !m.deviceInfo.Enabled() {
		return nil
	}
	held := map[string]bool{}
	var devices []deviceinfo.Device
	for _, a := range m.state.List() {
		if a.ClaimUID != "" {
			continue
		}
		for _, id := range a.DeviceIDs {
			held[id] = true
		}
		devices = append(devices, deviceInfoOf(a, nil)...)
	}
	removed, err := m.deviceInfo.Prune(m.state.Devices(), func(id string) bool { return held[id] })
	if len(removed) > 0 {
		m.log.InfoS("removed the device-info files of devices no allocation holds", "files", len(removed))
	}
	if err := errors.Join(err, m.deviceInfo.Ensure(devices)); err != nil {
		m.metrics.countError("device-info")
		return err
	}
	return nil
}
