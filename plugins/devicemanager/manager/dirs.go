package manager

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/contivpp/memif-agent/internal/securedir"
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

// openSocketRoot opens the socket root, making it (mode 0700) when
// missing; one that another user, or a group other than dir-group, could
// change is refused: through it they could redirect what the agent makes
// and removes as root.
func (m *Manager) openSocketRoot() (*securedir.Dir, error) {
	root, err := securedir.Open(m.cfg.SocketRoot, securedir.Options{Create: true, Mode: socketRootMode, Group: m.gid})
	if err != nil {
		return nil, fmt.Errorf("%w: socket root: %w", errDir, err)
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

// ensureDir re-creates a kept allocation's directory when it is missing
// (for example after a reboot emptied /var/run), and sets its mode and
// group again.
func (m *Manager) ensureDir(a allocation.Allocation) error {
	if !m.underSocketRoot(a.HostDir) {
		// socket-root changed since the allocation was made: the pod may
		// still use the old path, which is not ours to create any more.
		if _, err := os.Lstat(a.HostDir); err != nil {
			m.log.Warnf("directory %s of %s is missing and not under socket root %s; not re-creating it", a.HostDir, a, m.cfg.SocketRoot)
		}
		return nil
	}
	root, err := m.openSocketRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	made, err := root.Mkdir(a.ID, m.cfg.DirMode.Perm(), m.gid, true)
	if err != nil {
		return fmt.Errorf("%w: re-create %s: %w", errDir, a.HostDir, err)
	}
	if made {
		m.log.Infof("re-created missing directory %s of %s", a.HostDir, a)
	}
	return nil
}

// removeDir removes a released allocation's directory and its socket. A
// directory outside the socket root is never removed.
func (m *Manager) removeDir(a allocation.Allocation) error {
	if !m.underSocketRoot(a.HostDir) {
		m.metrics.countError("remove-directory")
		return fmt.Errorf("%w: %s of allocation %s is not under socket root %s; not removing it", errDir, a.HostDir, a.ID, m.cfg.SocketRoot)
	}
	err := m.removeUnderRoot(filepath.Base(a.HostDir))
	if err != nil {
		m.metrics.countError("remove-directory")
	}
	return err
}

func (m *Manager) removeUnderRoot(name string) error {
	root, err := m.openSocketRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.RemoveAll(name); err != nil {
		return fmt.Errorf("%w: %w", errDir, err)
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
	root, err := m.openSocketRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	entries, err := root.Entries()
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
		if err := root.RemoveAll(entry.Name()); err != nil {
			errs = append(errs, fmt.Errorf("%w: remove orphan directory %s: %w", errDir, dir, err))
			continue
		}
		m.log.Warnf("removed orphan directory %s: no checkpointed allocation holds it (an Allocate cut short by a crash)", dir)
	}
	return errors.Join(errs...)
}
