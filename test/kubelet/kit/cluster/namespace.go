package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// nodePaths are the node's fixed paths that containerd, kubelet, the agent
// and the pods use, each replaced in the node's private mount namespace by
// a directory under the cluster's work dir: kubelet's device-plugin and
// pod-resources sockets, pod logs, CNI state, network namespaces, the
// runtime's shim sockets, the agent's host paths (the chart's DaemonSet,
// deploy/helm/memif-agent), the CDI specs the DRA driver writes for
// containerd (dra.enabled), the device-info files (the device-info spec's
// directory, which the chart mounts) and VPP's run directory with its API socket
// (vpp.enabled).
// Nothing of two clusters, or of the host, meets there.
var nodePaths = []string{
	kubeletRoot,
	"/var/log/pods",
	"/var/log/containers",
	"/var/lib/cni",
	"/run/netns",
	"/run/containerd",
	"/run/contiv",
	"/run/memif-agent",
	"/var/lib/memif-agent",
	"/run/vpp",
	"/run/cdi",
	"/run/k8s.cni.cncf.io",
}

// kubeletRoot is bound with shared propagation, as a systemd host has it.
// Kubelet otherwise bind-mounts its root over itself at start to make it
// shared, while another of its goroutines already creates the pods API
// socket there: a rename whose two paths straddle that new mount fails
// with "invalid cross-device link" and kubelet exits.
const kubeletRoot = "/var/lib/kubelet"

// mountNamespace is the node's private mount namespace, held open by a
// sleeping process; it ends, and every mount made in it with it, when the
// last process in it exits.
type mountNamespace struct {
	holder *process
	// root holds one directory per node path.
	root string
	// mountPoints is the namespace's hold on the host's mount points.
	mountPoints *mountPoints
}

func newMountNamespace(logDir, root string) (*mountNamespace, error) {
	mountPoints, err := holdMountPoints(os.TempDir())
	if err != nil {
		return nil, err
	}
	ns := &mountNamespace{root: root, mountPoints: mountPoints}
	holder, err := startProcess(logDir, "mount-namespace", nil, "unshare", "--mount", "--propagation", "private", "sleep", "infinity")
	if err != nil {
		mountPoints.release()
		return nil, err
	}
	ns.holder = holder
	if err := ns.waitUnshared(); err != nil {
		ns.close()
		return nil, err
	}
	for _, p := range nodePaths {
		if err := ns.bind(p); err != nil {
			ns.close()
			return nil, err
		}
	}
	return ns, nil
}

// waitUnshared waits until the holder runs sleep in its own namespace
// (unshare execs it once the namespace exists).
func (ns *mountNamespace) waitUnshared() error {
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return fmt.Errorf("read this process's mount namespace: %w", err)
	}
	for {
		if err := ns.holder.Running(); err != nil {
			return fmt.Errorf("create the node's mount namespace (needs root and util-linux's unshare): %w", err)
		}
		theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", ns.holder.Pid()))
		if err == nil && theirs != self {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// bind mounts a fresh directory of the work dir over nodePath inside the
// namespace, creating the mount point on the host if it is missing.
func (ns *mountNamespace) bind(nodePath string) error {
	source := ns.hostPath(nodePath)
	if err := os.MkdirAll(source, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", source, err)
	}
	if err := ns.mountPoints.create(nodePath); err != nil {
		return err
	}
	if out, err := ns.command("mount", "--bind", source, nodePath).CombinedOutput(); err != nil {
		return fmt.Errorf("bind %s over %s in the node's mount namespace: %w: %s", source, nodePath, err, out)
	}
	if nodePath != kubeletRoot {
		return nil
	}
	if out, err := ns.command("mount", "--make-rshared", nodePath).CombinedOutput(); err != nil {
		return fmt.Errorf("make %s shared in the node's mount namespace: %w: %s", nodePath, err, out)
	}
	return nil
}

// hostPath is where the host sees what the node has at nodePath (a path
// under one of nodePaths); other paths are the same on both.
func (ns *mountNamespace) hostPath(nodePath string) string {
	// /var/run is a symlink to /run on the node as on the host.
	if rest, ok := strings.CutPrefix(nodePath, "/var/run/"); ok {
		nodePath = "/run/" + rest
	}
	for _, p := range nodePaths {
		if nodePath == p || strings.HasPrefix(nodePath, p+"/") {
			return filepath.Join(ns.root, strings.TrimPrefix(p, "/"), strings.TrimPrefix(nodePath, p))
		}
	}
	return nodePath
}

// argv returns the command line that runs argv inside the namespace;
// nsenter execs it, so the pid is argv's own. Entering a mount namespace
// moves a process to the namespace's root; --root keeps it in the
// holder's, which differs when the harness itself runs in a chroot (as
// scripts/fresh-machine.sh runs CI).
func (ns *mountNamespace) argv(argv ...string) []string {
	holder := "/proc/" + strconv.Itoa(ns.holder.Pid())
	return append([]string{"nsenter", "--mount=" + holder + "/ns/mnt", "--root=" + holder + "/root", "--"}, argv...)
}

func (ns *mountNamespace) command(argv ...string) *exec.Cmd {
	full := ns.argv(argv...)
	return exec.Command(full[0], full[1:]...)
}

// close ends the namespace (its mounts go with it) and gives up its hold
// on the host's mount points, which the last cluster out removes
// (mountpoints.go).
func (ns *mountNamespace) close() {
	_ = ns.holder.stop()
	ns.mountPoints.release()
}
