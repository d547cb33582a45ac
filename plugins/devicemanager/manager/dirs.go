package manager

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
)

// errDir is matched by every allocation-directory failure.
var errDir = errors.New("allocation directory")

// socketRootMode: only root (the runtime mounting the directories, the
// vswitch) goes through the socket root; pods see only their own directory.
const socketRootMode = 0o700

func (m *Manager) hostDir(allocationID string) string {
	return filepath.Join(m.cfg.SocketRoot, allocationID)
}

// makeDir creates a fresh directory for a, refusing one that exists.
func (m *Manager) makeDir(a allocation.Allocation) error {
	if err := os.MkdirAll(m.cfg.SocketRoot, socketRootMode); err != nil {
		return fmt.Errorf("%w: create socket root %s: %w", errDir, m.cfg.SocketRoot, err)
	}
	if err := os.Mkdir(a.HostDir, m.cfg.DirMode.Perm()); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s already exists; refusing to hand an old directory to a new allocation: %w", errDir, a.HostDir, err)
		}
		return fmt.Errorf("%w: create %s: %w", errDir, a.HostDir, err)
	}
	if err := m.setDirAccess(a.HostDir); err != nil {
		os.Remove(a.HostDir)
		return err
	}
	return nil
}

// setDirAccess sets the configured mode (Mkdir's is cut by the umask) and
// group.
func (m *Manager) setDirAccess(dir string) error {
	if err := os.Chmod(dir, m.cfg.DirMode.Perm()); err != nil {
		return fmt.Errorf("%w: set mode %s on %s: %w", errDir, m.cfg.DirMode.Perm(), dir, err)
	}
	if m.gid >= 0 {
		if err := os.Chown(dir, -1, m.gid); err != nil {
			return fmt.Errorf("%w: set group %d (dir-group %q) on %s: %w", errDir, m.gid, m.cfg.DirGroup, dir, err)
		}
	}
	return nil
}

// ensureDir re-creates a kept allocation's directory when it is missing
// (for example after a reboot emptied /var/run).
func (m *Manager) ensureDir(a allocation.Allocation) error {
	if _, err := os.Stat(a.HostDir); err == nil {
		return nil
	}
	if !m.underSocketRoot(a.HostDir) {
		// socket-root changed since the allocation was made: the pod may
		// still use the old path, which is not ours to create any more.
		m.log.Warnf("directory %s of %s is missing and not under socket root %s; not re-creating it", a.HostDir, a, m.cfg.SocketRoot)
		return nil
	}
	if err := os.MkdirAll(m.cfg.SocketRoot, socketRootMode); err != nil {
		return fmt.Errorf("%w: create socket root %s: %w", errDir, m.cfg.SocketRoot, err)
	}
	if err := os.Mkdir(a.HostDir, m.cfg.DirMode.Perm()); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: re-create %s: %w", errDir, a.HostDir, err)
	}
	m.log.Infof("re-created missing directory %s of %s", a.HostDir, a)
	return m.setDirAccess(a.HostDir)
}

// removeDir removes a released allocation's directory and its socket. A
// directory outside the socket root is never removed.
func (m *Manager) removeDir(a allocation.Allocation) error {
	if !m.underSocketRoot(a.HostDir) {
		m.metrics.countError("remove-directory")
		return fmt.Errorf("%w: %s of allocation %s is not under socket root %s; not removing it", errDir, a.HostDir, a.ID, m.cfg.SocketRoot)
	}
	if err := os.RemoveAll(a.HostDir); err != nil {
		m.metrics.countError("remove-directory")
		return fmt.Errorf("%w: remove %s: %w", errDir, a.HostDir, err)
	}
	return nil
}

func (m *Manager) underSocketRoot(dir string) bool {
	rel, err := filepath.Rel(m.cfg.SocketRoot, dir)
	return err == nil && filepath.IsLocal(rel) && filepath.Dir(rel) == "."
}

// removeOrphanDirs removes the allocation directories under the socket root
// that no allocation holds. Every allocation is in the checkpoint before
// Allocate returns, so when the checkpoint was restored whole such a
// directory was never handed to kubelet: the agent died between making it
// and recording it. Entries not named like an allocation are left alone.
func (m *Manager) removeOrphanDirs() error {
	entries, err := os.ReadDir(m.cfg.SocketRoot)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: list socket root %s for orphan directories: %w", errDir, m.cfg.SocketRoot, err)
	}
	held := map[string]bool{}
	for _, a := range m.state.List() {
		held[a.HostDir] = true
	}
	var errs []error
	for _, entry := range entries {
		dir := m.hostDir(entry.Name())
		if !entry.IsDir() || !allocation.IsID(entry.Name()) || held[dir] {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("%w: remove orphan directory %s: %w", errDir, dir, err))
			continue
		}
		m.log.Warnf("removed orphan directory %s: no checkpointed allocation holds it (an Allocate cut short by a crash)", dir)
	}
	return errors.Join(errs...)
}
