package deviceplugin_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

func TestRegistrationAndCapacity(t *testing.T) {
	n := newNode(t)
	n.startAgent(t, n.cfg)
	capacity, allocatable := n.kubelet.Capacity(resource)
	if capacity != deviceCount || allocatable != deviceCount {
		t.Errorf("kubelet reports capacity %d, allocatable %d of %s; want %d of each", capacity, allocatable, resource, deviceCount)
	}
	if info, err := os.Stat(n.cfg.PluginSocketPath()); err != nil || info.Mode().Type() != os.ModeSocket {
		t.Errorf("plugin socket %s: %v, mode %v; want a socket in the kubelet's plugin directory", n.cfg.PluginSocketPath(), err, info)
	}
}

func TestAllocateGivesEachContainerItsMemif(t *testing.T) {
	n := newNode(t)
	a := n.startAgent(t, n.cfg)
	tests := []struct {
		name     string
		requests []int64
	}{
		{name: "one container, one memif", requests: []int64{1}},
		{name: "one container, two memifs", requests: []int64{2}},
		{name: "two containers", requests: []int64{1, 1}},
		{name: "a container without memif", requests: []int64{0, 1}},
	}
	seenDirs, seenSecrets := map[string]string{}, map[string]string{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := kubelettest.NewPod("pod", resource, tt.requests...)
			// Pods stay: the agent learns of deletions from the pod
			// manager, which these tests do not run.
			options := n.runContainers(t, pod)
			for i, container := range pod.Spec.Containers {
				got := memifOf(options[container.Name])
				if tt.requests[i] == 0 {
					if len(got.envs)+len(got.annotations)+len(got.mounts) != 0 {
						t.Errorf("container %s asked for no memif but got %+v", container.Name, got)
					}
					continue
				}
				where := fmt.Sprintf("%s (container %s)", tt.name, container.Name)
				checkMemif(t, n, got)
				hostDir := got.mounts[n.cfg.ContainerDir]
				if other, seen := seenDirs[hostDir]; seen {
					t.Errorf("%s got directory %s, already given to %s", where, hostDir, other)
				}
				if other, seen := seenSecrets[got.envs[dmapi.EnvMemifSecret]]; seen {
					t.Errorf("%s got the secret already given to %s", where, other)
				}
				seenDirs[hostDir], seenSecrets[got.envs[dmapi.EnvMemifSecret]] = where, where
				checkAllocationHolds(t, a, hostDir, n.kubelet.Devices(pod.UID, container.Name, resource))
			}
		})
	}
}

// checkMemif checks what the runtime got for one container against the
// configuration: the envs, the three annotations, one mount, and the
// directory behind it.
func checkMemif(t *testing.T, n *node, got memif) {
	t.Helper()
	containerSocket := filepath.Join(n.cfg.ContainerDir, n.cfg.SocketName)
	secret := got.envs[dmapi.EnvMemifSecret]
	hostDir, mounted := got.mounts[n.cfg.ContainerDir]
	if len(got.envs) != 2 || got.envs[dmapi.EnvMemifSocket] != containerSocket || secret == "" || len(secret) > 24 {
		t.Errorf("envs %v: want %s=%s and %s of 1 to 24 characters (memif's limit)",
			keys(got.envs), dmapi.EnvMemifSocket, containerSocket, dmapi.EnvMemifSecret)
	}
	if len(got.mounts) != 1 || !mounted || filepath.Dir(hostDir) != n.cfg.SocketRoot {
		t.Errorf("mounts %v: want one directory under %s mounted at %s", got.mounts, n.cfg.SocketRoot, n.cfg.ContainerDir)
	}
	wantAnnotations := map[string]string{
		dmapi.AnnotationSocketHost:      filepath.Join(hostDir, n.cfg.SocketName),
		dmapi.AnnotationSocketContainer: containerSocket,
		dmapi.AnnotationSecret:          secret,
	}
	if len(got.annotations) != len(wantAnnotations) {
		t.Errorf("annotations %v: want exactly %v", keys(got.annotations), keys(wantAnnotations))
	}
	for name, want := range wantAnnotations {
		if got.annotations[name] != want {
			t.Errorf("annotation %s is %q, want %q", name, got.annotations[name], want)
		}
	}
	checkDirMode(t, hostDir, n.cfg.DirMode.Perm())
	checkDirMode(t, n.cfg.SocketRoot, 0o700)
}

func checkDirMode(t *testing.T, dir string, want os.FileMode) {
	t.Helper()
	info, err := os.Stat(dir)
	if err != nil {
		t.Errorf("directory %s: %v", dir, err)
		return
	}
	if !info.IsDir() || info.Mode().Perm() != want {
		t.Errorf("%s has mode %v, want a directory with mode %v", dir, info.Mode(), want)
	}
}

// checkAllocationHolds checks that the agent's allocation with hostDir
// holds exactly the devices kubelet gave the container.
func checkAllocationHolds(t *testing.T, a *agent, hostDir string, kubeletDevices []string) {
	t.Helper()
	for _, info := range a.DeviceManager.ListAllocations() {
		if info.HostDir != hostDir {
			continue
		}
		held := slices.Sorted(slices.Values(info.DeviceIDs))
		if !slices.Equal(held, kubeletDevices) {
			t.Errorf("allocation %s holds devices %v, kubelet gave the container %v", info.AllocationID, held, kubeletDevices)
		}
		return
	}
	t.Errorf("the agent lists no allocation with directory %s", hostDir)
}

func keys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
