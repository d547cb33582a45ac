package manager

import (
	"errors"
	"fmt"
	"maps"
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
// with the node. kubelet writes each answer into its device checkpoint (a
// synced file, renamed into place) before any container gets it, and
// after a node restart gives the containers it restarts the answers that
// checkpoint holds; one its restart lost, with its answer, is allocated
// again. So after a node restart the allocations are restored from
// kubelet's checkpoint (recoverFromKubelet), the pod tracker binds them
// again, and collection releases what is gone: Allocate costs no flush of
// its own. Claims are in no checkpoint of kubelet's, so every change to a
// claim's allocation (a binding or release included) is synced, and each
// sync makes the buffered records before it durable too.

// bootIDFile is where Linux gives the current boot's ID.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// checkBoot compares the boot the checkpoint was last made whole in
// (markBoot) with the current one. It returns the current boot ID (""
// when it cannot be read: every save is then synced) and whether buffered
// records may have been lost since: a checkpoint never marked never had
// any (this agent buffers only once it is marked; one of before synced
// every change), and one marked in another boot, or whose boot cannot be
// told, may have.
func (m *Manager) checkBoot() (string, bool) {
	marked, err := checkpoint.Boot(m.cfg.CheckpointPath)
	if err != nil {
		m.log.WarnS("the checkpoint's boot is unreadable: recovering from kubelet's device checkpoint as after a node restart", "err", err)
		marked = "unknown"
	}
	content, err := os.ReadFile(bootIDFile)
	current := strings.TrimSpace(string(content))
	if err != nil || current == "" {
		m.log.WarnS("the boot ID is unreadable: every change to the checkpoint is synced", "file", bootIDFile, "err", err)
		return "", marked != ""
	}
	return current, marked != "" && marked != current
}

// markBoot records that the checkpoint, just saved durably, is whole in
// boot bootID; once it is, the device plugin's changes are saved buffered.
func (m *Manager) markBoot(bootID string) {
	if bootID == "" || m.bootMarked {
		return
	}
	if err := m.checkpoint.MarkBoot(bootID); err != nil {
		m.metrics.countError("checkpoint-write")
		m.log.ErrorS(err, "the checkpoint's boot not recorded: every change to the checkpoint stays synced until the agent restarts")
		return
	}
	m.bootMarked = true
}

// recoverFromKubelet brings the allocations in line with the answers
// kubelet keeps for the resource, after a node restart that may have lost
// buffered records:
//   - an allocation kubelet lists is kept, and when unbound its grace
//     starts again, so that collection leaves it to the pod tracker while
//     its pod starts again (its binding may be what was lost);
//   - an answer the checkpoint lost is restored, and an allocation holding
//     its devices that kubelet does not list is dropped: kubelet gave the
//     devices to the answer's container, so that one was released in a
//     lost record;
//   - an answer whose devices an allocation kubelet lists holds is not
//     restored: it was taken over (an init container's devices handed on
//     to the next container of its pod, whose answer kubelet keeps too);
//   - answers the checkpoint lost that share a device are not restored:
//     which of them came last cannot be told, and each is logged.
//
// An answer that is not one of this agent's is skipped.
func (m *Manager) recoverFromKubelet() {
	if !m.cfg.DevicePlugin {
		return
	}
	entries, err := kubeletcheckpoint.Read(m.cfg.PluginDir, m.cfg.ResourceName)
	if err != nil {
		m.metrics.countError("kubelet-checkpoint")
		m.log.ErrorS(err, "kubelet's device checkpoint not fully read after a node restart: an allocation made just before it may be lost, and its pod's memif not connect until the pod is recreated")
	}
	held := map[string]bool{}
	for _, a := range m.state.List() {
		held[a.ID] = true
	}
	listed := map[string]allocation.Allocation{}
	lostByDevice := map[string][]string{}
	for _, entry := range entries {
		a, err := m.answeredAllocation(entry)
		if err != nil {
			m.log.WarnS("an answer in kubelet's device checkpoint is not one of this agent's: skipped", "podUID", entry.PodUID, "container", entry.ContainerName, "devices", entry.DeviceIDs, "err", err)
			continue
		}
		listed[a.ID] = a
		if held[a.ID] {
			m.state.RestartGrace(a.ID, m.opts.Now().UTC())
			continue
		}
		for _, device := range a.DeviceIDs {
			lostByDevice[device] = append(lostByDevice[device], a.ID)
		}
	}
	recovered := 0
	for _, id := range slices.Sorted(maps.Keys(listed)) {
		a := listed[id]
		if held[id] {
			continue
		}
		if m.restoreAnswer(a, listed, lostByDevice) {
			recovered++
			m.log.WarnS("allocation recovered from kubelet's device checkpoint after a node restart", allocationPairs(a)...)
		}
	}
	if recovered > 0 {
		m.log.InfoS("recovered allocations from kubelet's device checkpoint", "allocations", recovered, "checkpoint", filepath.Join(m.cfg.PluginDir, kubeletcheckpoint.FileName))
	}
}

// restoreAnswer restores a, an answer kubelet lists that the checkpoint
// lost, as recoverFromKubelet says, and tells whether it did.
func (m *Manager) restoreAnswer(a allocation.Allocation, listed map[string]allocation.Allocation, lostByDevice map[string][]string) bool {
	for _, device := range a.DeviceIDs {
		if rivals := lostByDevice[device]; len(rivals) > 1 {
			m.log.WarnS("allocation in kubelet's device checkpoint not recovered: kubelet lists other answers for its devices too, and which came last cannot be told; its container's memif connects once the pod is recreated", allocationPairs(a, "answersOfDevice", rivals)...)
			return false
		}
	}
	var stale []allocation.Allocation
	for _, holder := range m.state.Holders(a.DeviceIDs) {
		if _, ok := listed[holder.ID]; ok {
			m.log.InfoS("answer in kubelet's device checkpoint not recovered: its devices were handed on to an allocation kubelet lists", allocationPairs(a, "heldBy", holder.ID)...)
			return false
		}
		stale = append(stale, holder)
	}
	var refused *allocation.RequestError
	if err := m.state.CheckRequest(a.DeviceIDs); err != nil && (!errors.As(err, &refused) || refused.Problem != allocation.DevicesInUse) {
		m.log.ErrorS(err, "allocation in kubelet's device checkpoint not recovered", allocationPairs(a)...)
		return false
	}
	for _, holder := range stale {
		if _, err := m.state.Remove(holder.ID); err == nil {
			m.log.WarnS("allocation dropped: kubelet's device checkpoint gives its devices to another", allocationPairs(holder, "to", a.ID)...)
		}
	}
	if err := m.state.Add(a); err != nil {
		m.log.ErrorS(err, "allocation in kubelet's device checkpoint not recovered", allocationPairs(a)...)
		return false
	}
	return true
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
	if err != nil {
		return allocation.Allocation{}, err
	}
	a.DeviceIDs = slices.Clone(entry.DeviceIDs)
	return a, nil
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

// persistRecoverable persists a change to changed that recovery after a
// node restart does without (see the top of this file): buffered once the
// boot is marked, unless changed holds a claim's allocation, which
// kubelet's device checkpoint does not hold.
func (m *Manager) persistRecoverable(changed ...allocation.Allocation) error {
	if !m.bootMarked || slices.ContainsFunc(changed, func(a allocation.Allocation) bool { return a.ClaimUID != "" }) {
		return m.persist()
	}
	return m.save(m.checkpoint.SaveBuffered)
}

// boundAllocations are the allocations of bindings.
func boundAllocations(bindings []allocation.Binding) []allocation.Allocation {
	allocations := make([]allocation.Allocation, len(bindings))
	for i, b := range bindings {
		allocations[i] = b.Allocation
	}
	return allocations
}
