package cluster

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ownerFile in a work dir holds the pid of the process that started the
// cluster. A test binary killed by go test's -timeout (a panic) or by
// SIGKILL runs no Stop: its peers die with it (Pdeathsig), but containerd's
// shims and the pods outlive it. The next Start reaps such clusters.
const ownerFile = "owner.pid"

// workDirPrefix names the work dirs in the temp dir.
const workDirPrefix = "mc"

func writeOwner(dir string) error {
	return os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600)
}

// reapStale removes the clusters whose owner process is gone: it kills
// what is left of their pods and shims, and removes their cgroups, bridge
// and work dir. Clusters of live processes are left alone.
func reapStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), workDirPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		reap(dir)
	}
}

func reap(dir string) {
	name := filepath.Base(dir)
	cg := &cgroupRoot{name: name}
	if mounts, err := cgroupMounts(); err == nil {
		for _, m := range mounts {
			if _, err := os.Stat(filepath.Join(m, name)); err == nil {
				cg.dirs = append(cg.dirs, filepath.Join(m, name))
			}
		}
	}
	cg.kill()
	killShims((&mountNamespace{root: nodeRoot(dir)}).hostPath(nodeRuntimeSocket))
	reapNodes(dir)
	_ = cg.remove()
	_ = exec.Command("ip", "link", "delete", bridgeName(dir)).Run()
	_ = os.RemoveAll(dir)
}

// bridgeName is the pods' bridge of the cluster in dir: "mc" and the work
// dir's random suffix, within the 15 bytes of a link name.
func bridgeName(dir string) string {
	name := workDirPrefix + strings.TrimPrefix(filepath.Base(dir), workDirPrefix)
	if len(name) > 15 {
		name = name[:15]
	}
	return name
}
