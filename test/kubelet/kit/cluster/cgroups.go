package cluster

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// cgroupRoot is kubelet's --cgroup-root for one cluster: a cgroup of its own
// in every hierarchy, so the pods of two clusters (or of a kubelet on the
// host) never share kubepods.
type cgroupRoot struct {
	name string
	dirs []string
}

// cgroupMounts returns the mount points of the host's cgroup hierarchies
// (v1 controllers, the named systemd one and the unified v2 one).
func cgroupMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil, fmt.Errorf("read the mounts: %w", err)
	}
	defer f.Close()
	var mounts []string
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) > 2 && (fields[2] == "cgroup" || fields[2] == "cgroup2") {
			mounts = append(mounts, fields[1])
		}
	}
	return mounts, scanner.Err()
}

func newCgroupRoot(name string) (*cgroupRoot, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	c := &cgroupRoot{name: name}
	for _, m := range mounts {
		dir := filepath.Join(m, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			c.remove()
			return nil, fmt.Errorf("create the kubelet cgroup root %s: %w", dir, err)
		}
		c.dirs = append(c.dirs, dir)
		// A new v1 cpuset cgroup has no CPUs nor memory nodes: give it
		// its parent's, or no process could join it.
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			parent, err := os.ReadFile(filepath.Join(m, file))
			if err != nil {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, file), parent, 0o644); err != nil {
				c.remove()
				return nil, fmt.Errorf("copy %s into %s: %w", file, dir, err)
			}
		}
	}
	return c, nil
}

// kill SIGKILLs every process left in the cgroups (pods the runtime did
// not stop) until they are empty.
func (c *cgroupRoot) kill() {
	for attempt := 0; attempt < 100; attempt++ {
		pids := c.pids()
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *cgroupRoot) pids() []int {
	seen := map[int]bool{}
	var pids []int
	for _, dir := range c.dirs {
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(path)
			for _, field := range strings.Fields(string(data)) {
				var pid int
				if _, err := fmt.Sscan(field, &pid); err == nil && !seen[pid] {
					seen[pid] = true
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// remove deletes the cgroups, children first.
func (c *cgroupRoot) remove() error {
	var firstErr error
	for _, dir := range c.dirs {
		var all []string
		_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				all = append(all, path)
			}
			return nil
		})
		sort.Sort(sort.Reverse(sort.StringSlice(all)))
		for _, d := range all {
			if err := syscall.Rmdir(d); err != nil && firstErr == nil && !os.IsNotExist(err) {
				firstErr = fmt.Errorf("remove cgroup %s: %w", d, err)
			}
		}
	}
	return firstErr
}
