package manager

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/contivpp/memif-agent/internal/securedir"
	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// errDir is matched by every allocation-directory failure.
var errDir = errors.New("allocation directory")

// socketRootMode: only root (the runtime mounting the directories, the
// vswitch) goes through the socket root; pods see only their own directory.
const socketRootMode = 0o700

func (m *Manager) hostDir(allocationID string) string {
	return filepath.Join(m.cfg.SocketRoot, allocationID)
}

// openSocketRoot opens the socket root, making it (mode 0700) when
// missing; one that another user, or a group other than dir-group, could
// change is refused: through it they could redirect what the agent makes
// and removes as root.
func (m *Manager) openSocketRoot() (*securedir.Dir, error) {
	root, err := securedir.Open(m.cfg.SocketRoot, securedir.Options{Create: true, Mode: socketRootMode, Group: m.gid})
	switch {
	case errors.Is(err, securedir.ErrUnsafe):
		return nil, fmt.Errorf("%w: refusing the socket root: %w", errDir, err)
	case err != nil:
		return nil, fmt.Errorf("%w: create socket root %s: %w", errDir, m.cfg.SocketRoot, err)
	}
	return root, nil
}

// makeDir creates a fresh directory for a, refusing one that exists.
func (m *Manager) makeDir(a allocation.Allocation) error {
	root, err := m.openSocketRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	if _, err := root.Mkdir(a.ID, m.cfg.DirMode.Perm(), m.gid, false); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s already exists; refusing to hand an old directory to a new allocation: %w", errDir, a.HostDir, err)
		}
		return fmt.Errorf("%w: create %s with mode %s and dir-group %q: %w", errDir, a.HostDir, m.cfg.DirMode.Perm(), m.cfg.DirGroup, err)
	}
	return nil
}

// ensureDirs re-creates each kept allocation's directory that is missing
// (for example after a reboot emptied /var/run), and sets its mode and
// group again. Only a socket root that cannot be opened fails it.
func (m *Manager) ensureDirs(kept []allocation.Allocation) error {
	var underRoot []allocation.Allocation
	for _, a := range kept {
		if m.underSocketRoot(a.HostDir) {
			underRoot = append(underRoot, a)
			continue
		}
		// socket-root changed since the allocation was made: the pod may
		// still use the old path, which is not ours to create any more.
		if _, err := os.Lstat(a.HostDir); err != nil {
			m.log.WarnS("allocation directory missing and not under the socket root: not re-created", allocationPairs(a, "dir", a.HostDir, "socketRoot", m.cfg.SocketRoot)...)
		}
	}
	if len(underRoot) == 0 {
		return nil
	}
	root, err := m.openSocketRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	for _, a := range underRoot {
		m.ensureDir(root, a)
	}
	return nil
}

// ensureDir re-creates a's directory in root. A path that is not a
// directory is reported and left as it is, not followed: a dir-group
// member, who may write in the socket root, can put a link or a file
// there, and that must cost only this allocation's pod its socket
// directory, not fail every resync and keep the agent unready.
func (m *Manager) ensureDir(root *securedir.Dir, a allocation.Allocation) {
	made, err := root.Mkdir(a.ID, m.cfg.DirMode.Perm(), m.gid, true)
	switch {
	case err != nil:
		m.metrics.countError("unusable-directory")
		m.log.ErrorS(err, "allocation directory not re-created: left as it is; remove what is at dir and the next resync makes the directory", allocationPairs(a, "dir", a.HostDir)...)
	case made:
		m.log.InfoS("re-created missing allocation directory", allocationPairs(a, "dir", a.HostDir)...)
	}
}

// removeDir removes a released allocation's directory and its socket,
// and the device-info files of its devices no allocation holds any more.
// A directory outside the socket root is never removed.
func (m *Manager) removeDir(a allocation.Allocation) error {
	deviceInfoErr := m.removeDeviceInfo(a)
	if !m.underSocketRoot(a.HostDir) {
		m.metrics.countError("remove-directory")
		return errors.Join(fmt.Errorf("%w: %s of allocation %s is not under socket root %s; not removing it", errDir, a.HostDir, a.ID, m.cfg.SocketRoot), deviceInfoErr)
	}
	err := m.removeUnderRoot(filepath.Base(a.HostDir))
	if err != nil {
		m.metrics.countError("remove-directory")
	}
	return errors.Join(err, deviceInfoErr)
}

// removeUnderRoot removes name from the socket root: at once when it
// holds a few files, otherwise by moving it to the trash, in one rename,
// for the remover to empty off the event loop. Either way its path is
// free when it returns.
func (m *Manager) removeUnderRoot(name string) error {
	root, err := m.openSocketRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	if root.RemoveSmall(name, smallDirEntries) {
		return nil
	}
	trash, err := root.PrivateDir(trashName, true)
	if err != nil {
		return fmt.Errorf("%w: open the directory released directories are removed from: %w", errDir, err)
	}
	defer trash.Close()
	_, err = root.MoveInto(name, trash)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errDir, err)
	}
	m.remover.wake()
	return nil
}

func (m *Manager) underSocketRoot(dir string) bool {
	rel, err := filepath.Rel(m.cfg.SocketRoot, dir)
	return err == nil && filepath.IsLocal(rel) && filepath.Dir(rel) == "."
}

// findUnexplainedDirs reports the allocation directories under the socket
// root that no allocation holds, and keeps them until
// settleUnexplainedDirs may remove them. Such a directory is either from
// an Allocate a crash cut short before it was recorded (never handed to
// kubelet), or from an allocation whose record was lost to checkpoint
// damage, which a running pod may still use: which one, only kubelet
// knows. Entries not named like an allocation are left alone.
func (m *Manager) findUnexplainedDirs() error {
	root, err := m.openSocketRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	entries, err := root.Entries()
	if err != nil {
		return fmt.Errorf("%w: list socket root %s for directories no allocation holds: %w", errDir, m.cfg.SocketRoot, err)
	}
	held := map[string]bool{}
	for _, a := range m.state.List() {
		held[a.HostDir] = true
	}
	m.unexplained, m.unremoved = map[string]string{}, map[string]bool{}
	for _, entry := range entries {
		device, isAllocation := allocation.DeviceOfID(entry.Name())
		if !entry.IsDir() || !isAllocation || held[m.hostDir(entry.Name())] {
			continue
		}
		m.unexplained[entry.Name()] = device
		m.metrics.countError("unexplained-directory")
		m.log.WarnS("kept a directory no allocation in the checkpoint holds: it is removed once kubelet's pod-resources shows no pod holding its device", "dir", m.hostDir(entry.Name()), "device", device)
	}
	return nil
}

// settleUnexplainedDirs recovers the allocation of each directory
// findUnexplainedDirs kept that a live container mounts with the
// allocation's annotations, and removes the others once live, with
// kubelet's pod-resources (LivePods.KubeletDevices), shows that no pod
// holds their device nor mounts them. Without pod-resources they are kept.
func (m *Manager) settleUnexplainedDirs(live *podapi.LivePods) {
	if len(m.unexplained) == 0 {
		return
	}
	if m.recoverAllocations(live.Pods) > 0 {
		if err := m.persist(); err != nil {
			m.log.ErrorS(err, "persisting recovered allocations failed (the next change retries)")
		}
	}
	if !live.KubeletDevices {
		return
	}
	inUse := map[string]bool{}
	for _, pod := range live.Pods {
		for _, c := range pod.Containers {
			for _, source := range c.MountSources {
				inUse[source] = true
			}
			for _, ids := range c.DeviceIDs {
				for _, id := range ids {
					inUse[id] = true
				}
			}
		}
	}
	for name, device := range m.unexplained {
		dir := m.hostDir(name)
		if inUse[device] || inUse[dir] {
			continue
		}
		if err := m.removeUnderRoot(name); err != nil {
			if !m.unremoved[name] {
				m.unremoved[name] = true
				m.log.WarnS("removing a directory no pod holds failed: retried at every collection, not logged again", "dir", dir, "err", err)
			}
			continue
		}
		delete(m.unexplained, name)
		delete(m.unremoved, name)
		m.log.InfoS("removed a directory no allocation holds: kubelet shows no pod holding its device", "dir", dir, "device", device)
	}
}

// recoverAllocations rebuilds, from the container that mounts it, the
// allocation of each unexplained directory: kubelet handed the runtime
// the allocation's mount, socket paths and secret with the container, so
// the pod keeps its memif although the checkpoint lost it. It returns how
// many it recovered.
func (m *Manager) recoverAllocations(live []podapi.PodState) int {
	recovered := 0
	for _, pod := range live {
		for _, c := range pod.Containers {
			for _, source := range c.MountSources {
				name := filepath.Base(source)
				device, unexplained := m.unexplained[name]
				if !unexplained || source != m.hostDir(name) {
					continue
				}
				a, err := m.recoverAllocation(name, device, pod.Pod, c)
				if err != nil {
					m.log.WarnS("allocation of a directory not recovered from the container mounting it", "dir", source, "container", c.Name, "pod", pod.Pod, "err", err)
					continue
				}
				delete(m.unexplained, name)
				recovered++
				m.log.WarnS("allocation recovered from the container mounting its directory", allocationPairs(a, "mountedBy", c.Name, "mountedByPod", pod.Pod)...)
			}
		}
	}
	return recovered
}

func (m *Manager) recoverAllocation(name, device string, pod podapi.Pod, c podapi.PodContainer) (allocation.Allocation, error) {
	a, err := m.allocationOfAnnotations(m.hostDir(name), c.Annotations)
	if err != nil {
		return allocation.Allocation{}, err
	}
	a.DeviceIDs = slices.Clone(c.DeviceIDs[m.cfg.ResourceName])
	if !slices.Contains(a.DeviceIDs, device) {
		a.DeviceIDs = []string{device}
	}
	a.Pod, a.PodUID, a.ContainerName = pod.ID, pod.UID, c.Name
	return a, m.state.Add(a)
}
