package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Mount points on the host are shared by every node namespace of the
// machine: each binds its own directory over /var/lib/kubelet, /run/cdi
// and the other node paths, but the directory it binds over is the host's
// one. Removing such a directory on the host (rmdir) while another node's
// namespace still has its bind mount there is allowed since Linux 3.18,
// and the kernel then detaches that mount in the other namespace: its
// containerd and kubelet find the path gone. containerd's CDI cache, for
// one, keeps its inotify watch on the old directory (the events still
// come) but rescans the path, finds nothing and never resolves a spec
// again. Two clusters run at once whenever go test runs two suite
// packages in parallel, so a cluster removes the mount points only when
// no other cluster of the host holds them: every namespace holds a shared
// lock on mountPointsLock for its life, and the one that gets the lock
// exclusively at its close removes every mount point any of them created
// (listed in mountPointsList).
const (
	mountPointsLock = "memif-agent-cluster-mountpoints.lock"
	mountPointsList = "memif-agent-cluster-mountpoints.list"
)

// mountPoints is one namespace's hold on the host's mount points.
type mountPoints struct {
	// stateDir holds the lock and the list (the temp dir: one per host).
	stateDir string
	lock     *os.File
}

// holdMountPoints takes the shared hold on the mount points listed in
// stateDir; it waits while a closing cluster removes them.
func holdMountPoints(stateDir string) (*mountPoints, error) {
	path := filepath.Join(stateDir, mountPointsLock)
	lock, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the host's mount point lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_SH); err != nil {
		lock.Close()
		return nil, fmt.Errorf("lock %s shared: %w", path, err)
	}
	return &mountPoints{stateDir: stateDir, lock: lock}, nil
}

// create makes the mount point dir on the host, and the parents it lacks,
// listing each one it made for removal by the last cluster out.
func (m *mountPoints) create(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := m.create(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil
		}
		return fmt.Errorf("create the mount point %s: %w", dir, err)
	}
	list, err := os.OpenFile(filepath.Join(m.stateDir, mountPointsList), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("list the mount point %s: %w", dir, err)
	}
	defer list.Close()
	// One short write with O_APPEND: lines of clusters starting at once
	// do not interleave.
	if _, err := list.WriteString(dir + "\n"); err != nil {
		return fmt.Errorf("list the mount point %s: %w", dir, err)
	}
	return nil
}

// release gives the hold up. With no other cluster holding the mount
// points, it removes the listed ones, deepest first; a directory someone
// filled meanwhile stays (rmdir refuses it).
func (m *mountPoints) release() {
	if m == nil || m.lock == nil {
		return
	}
	defer func() {
		m.lock.Close()
		m.lock = nil
	}()
	if syscall.Flock(int(m.lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return
	}
	listPath := filepath.Join(m.stateDir, mountPointsList)
	dirs := readLines(listPath)
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, dir := range dirs {
		_ = os.Remove(dir)
	}
	_ = os.Remove(listPath)
}

func readLines(path string) []string {
	file, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer file.Close()
	var lines []string
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		if line := strings.TrimSpace(scanner.Text()); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}
