package manager

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/checkpoint"
	"github.com/contivpp/memif-agent/plugins/devicemanager/kubeletcheckpoint"
)

// Why the device plugin's changes are saved without a sync: a record the
// kernel holds survives the agent's crash and restart, and is lost only
// with the node. After a node restart, kubelet gives the restarted
// containers the answers its own checkpoint holds (synced before any
// container got one), so the allocations are restored from there
// (recoverFromKubelet); a binding is made again by the pod tracker, a
// release by the collection. Allocate then costs no flush of the disk:
// kubelet's own is the one the answer needs. Claims are not in kubelet's
// checkpoint, so their changes stay synced, and each sync makes the
// buffered records before it durable too.

// bootIDFile is where Linux gives the current boot's ID.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// checkBoot compares the boot the checkpoint was last made durable in
// with the current one. It returns the current boot ID ("" when it
// cannot be read: every save is then synced) and whether the node may
// have restarted since, losing buffered records.
func (m *Manager) checkBoot() (string, bool) {
	content, err := os.ReadFile(bootIDFile)
	current := strings.TrimSpace(string(content))
	if err != nil || current == "" {
		m.log.WarnS("the boot ID is unreadable: every change to the checkpoint is synced", "file", bootIDFile, "err", err)
		return "", true
	}
	marked, err := checkpoint.Boot(m.cfg.CheckpointPath)
	if err != nil {
		m.log.WarnS("the checkpoint's boot is unreadable: taken for another boot's", "err", err)
	}
	return current, marked != current
}

// markBoot records that the checkpoint, just saved durably, is whole in
// boot bootID; once it is, the device plugin's changes are saved buffered.
func (m *Manager) markBoot(bootID string) {
	if bootID == "" || m.bootMarked {
		return
	}
	if err := m.checkpoint.MarkBoot(bootID); err != nil {
		m.metrics.countError("checkpoint-write")
		m.log.ErrorS(err, "the checkpoint's boot not recorded: every change to the checkpoint stays synced")
		return
	}
	m.bootMarked = true
}

// recoverFromKubelet restores, after a node restart, the allocation of
// each answer kubelet keeps for the resource that the checkpoint lost. An
// answer wins over an allocation holding its devices: kubelet gave them
// to the answer's container, so the other was released in a record the
// restart lost. An answer that is not one of this agent's is skipped.
func (m *Manager) recoverFromKubelet() {
	if !m.cfg.DevicePlugin {
		return
	}
	entries, err := kubeletcheckpoint.Read(m.cfg.PluginDir, m.cfg.ResourceName)
	if err != nil {
		m.metrics.countError("kubelet-checkpoint")
		m.log.ErrorS(err, "kubelet's device checkpoint not fully read after a node restart: an allocation made just before it may be lost, and its pod's memif not connect until the pod is recreated")
	}
	recovered := 0
	for _, entry := range entries {
		a, err := m.answeredAllocation(entry)
		if err != nil {
			m.log.WarnS("an answer in kubelet's device checkpoint is not one of this agent's: skipped", "podUID", entry.PodUID, "container", entry.ContainerName, "devices", entry.DeviceIDs, "err", err)
			continue
		}
		if slices.ContainsFunc(m.state.List(), func(kept allocation.Allocation) bool { return kept.ID == a.ID }) {
			continue
		}
		for _, stale := range m.state.Holders(a.DeviceIDs) {
			if _, err := m.state.Remove(stale.ID); err == nil {
				m.log.WarnS("allocation dropped: kubelet's device checkpoint gives its devices to another", allocationPairs(stale, "to", a.ID)...)
			}
		}
		if err := m.state.Add(a); err != nil {
			m.log.ErrorS(err, "allocation in kubelet's device checkpoint not recovered", allocationPairs(a)...)
			continue
		}
		recovered++
		m.log.WarnS("allocation recovered from kubelet's device checkpoint after a node restart", allocationPairs(a, "kubeletPodUID", entry.PodUID, "kubeletContainer", entry.ContainerName)...)
	}
	if recovered > 0 {
		m.log.InfoS("recovered allocations from kubelet's device checkpoint", "allocations", recovered, "checkpoint", filepath.Join(m.cfg.PluginDir, kubeletcheckpoint.FileName))
	}
}

// answeredAllocation is the allocation entry's answer hands out: its
// directory mounted at container-dir, under the socket root, and its
// socket and secret in the answer's annotations.
func (m *Manager) answeredAllocation(entry kubeletcheckpoint.Entry) (allocation.Allocation, error) {
	var dir string
	for _, mount := range entry.Answer.Mounts {
		if mount.ContainerPath == m.cfg.ContainerDir {
			dir = mount.HostPath
		}
	}
	name := filepath.Base(dir)
	if dir == "" || dir != m.hostDir(name) {
		return allocation.Allocation{}, fmt.Errorf("it mounts no directory of %s at %s", m.cfg.SocketRoot, m.cfg.ContainerDir)
	}
	device, ok := allocation.DeviceOfID(name)
	if !ok || !slices.Contains(entry.DeviceIDs, device) {
		return allocation.Allocation{}, fmt.Errorf("directory %s is not an allocation of its devices %v", dir, entry.DeviceIDs)
	}
	a, err := m.allocationOfAnnotations(dir, entry.Answer.Annotations)
	a.DeviceIDs = slices.Clone(entry.DeviceIDs)
	return a, err
}

// allocationOfAnnotations is the allocation of directory dir that a
// container's answer annotations describe, devices not set.
func (m *Manager) allocationOfAnnotations(dir string, annotations map[string]string) (allocation.Allocation, error) {
	hostSocket := annotations[dmapi.AnnotationSocketHost]
	secret := annotations[dmapi.AnnotationSecret]
	if hostSocket != m.cfg.HostSocket(dir) || secret == "" {
		return allocation.Allocation{}, fmt.Errorf("its annotations name socket %q and %d secret bytes, want socket %s and a secret", hostSocket, len(secret), m.cfg.HostSocket(dir))
	}
	containerSocket := annotations[dmapi.AnnotationSocketContainer]
	if containerSocket == "" {
		containerSocket = m.cfg.ContainerSocket()
	}
	return allocation.Allocation{
		ID: filepath.Base(dir), HostDir: dir, HostSocket: hostSocket, ContainerSocket: containerSocket,
		Secret: secret, AllocatedAt: m.opts.Now().UTC(),
	}, nil
}

// persistRecoverable persists a change that recovery after a node restart
// does without (see the top of this file): buffered once the boot is
// marked, synced before.
func (m *Manager) persistRecoverable() error {
	if !m.bootMarked {
		return m.persist()
	}
	return m.save(m.checkpoint.SaveBuffered)
}
