package faults

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	docker "github.com/fsouza/go-dockerclient"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/contivpp/memif-agent/test/kit/dockerd"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/agenttest"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

const (
	concurrentAllocations = 100
	// killAfter is how many Allocate calls have returned when the agent is
	// killed.
	killAfter = 20

	annotationSocketHost = "io.contivpp.memif.socket.host"
	annotationSecret     = "io.contivpp.memif.secret"
	envSecret            = "MEMIF_SECRET"
)

// granted is one Allocate call that returned success.
type granted struct {
	device   string
	response *pluginapi.ContainerAllocateResponse
}

// TestKillDuringConcurrentAllocate kills the agent with SIGKILL while 100
// Allocate calls are in flight, then starts it again. What kubelet was told
// it got, it keeps, with the same secret; what kubelet was refused leaves
// no directory and no allocation behind, once kubelet's pod-resources
// shows no pod holding its device.
func TestKillDuringConcurrentAllocate(t *testing.T) {
	daemon := dockerd.Start(t)
	client := daemon.Client(t)
	image := dockerd.ImportSleeperImage(t, client)
	_, podResources := startKubelet(t)
	a := agenttest.New(t, agenttest.Setup{
		DeviceCount:        128,
		DockerEndpoint:     daemon.Endpoint(),
		PluginDir:          kubelettest.PluginDir,
		PodResourcesSocket: podResources,
	})
	a.Start()

	grants := allocateAndKill(t, a)
	if len(grants) < killAfter {
		t.Fatalf("only %d Allocate calls succeeded before the kill; want at least %d", len(grants), killAfter)
	}
	t.Logf("%d of %d Allocate calls succeeded before SIGKILL", len(grants), concurrentAllocations)

	// What kubelet does next: the containers it was given devices for are
	// created with what Allocate returned; the refused pods get nothing.
	createHolders(t, client, image, grants)

	// The restarted agent collects unbound allocations (made, but held by
	// no container) at once rather than after the default ten minutes, at
	// each of the pod manager's comparisons; every granted allocation is
	// held by a container by now.
	a.SetDeviceManagerConfig(agenttest.Setup{DeviceCount: 128, PluginDir: kubelettest.PluginDir, DeviceManager: "unbound-grace-period: 1ms\n"})
	agenttest.WriteConfig(t, a.ConfigDir, map[string]string{"podmanager.conf": fmt.Sprintf(
		"docker-endpoint: %s\npod-resources-socket: %q\nreconcile-period: 200ms\n", daemon.Endpoint(), podResources)})
	a.Args = []string{"-http-allow-changes"} // for a.Resync
	a.Start()
	a.RequireHealthy()
	if !strings.Contains(a.Log(), "restored") {
		t.Errorf("the restarted agent's log does not say it restored the checkpoint")
	}
	want := map[string]granted{}
	for _, g := range grants {
		want[g.response.Mounts[0].HostPath] = g
	}
	poll.Until(t, waitTimeout, "exactly the granted allocations kept after the restart", func() error {
		return keptExactly(t, a, want)
	})
	// A resync the operator asks for changes nothing.
	a.Resync()
	if err := keptExactly(t, a, want); err != nil {
		t.Fatalf("after POST /controller/resync: %v", err)
	}
}

// allocateAndKill runs concurrentAllocations Allocate calls, each for its
// own device, kills the agent once killAfter have returned, and returns the
// calls that succeeded.
func allocateAndKill(t *testing.T, a *agenttest.Agent) []granted {
	client := a.PluginClient()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		grants   []granted
		returned int
		killed   = make(chan struct{})
		once     sync.Once
	)
	for n := range concurrentAllocations {
		wg.Go(func() {
			device := deviceID(n)
			response, err := allocate(context.Background(), client, device)
			mu.Lock()
			defer mu.Unlock()
			returned++
			if err == nil {
				grants = append(grants, granted{device: device, response: response})
			}
			if returned == killAfter {
				once.Do(func() {
					a.Kill()
					close(killed)
				})
			}
		})
	}
	wg.Wait()
	select {
	case <-killed:
	default:
		t.Fatalf("fewer than %d Allocate calls returned", killAfter)
	}
	sort.Slice(grants, func(i, j int) bool { return grants[i].device < grants[j].device })
	return grants
}

// createHolders creates, without starting, one container per granted
// allocation in one pod, carrying what kubelet hands the runtime: the
// annotations (as labels, as dockershim does), the envs and the mount.
func createHolders(t *testing.T, client *docker.Client, image string, grants []granted) *dockerd.Pod {
	spec := dockerd.PodSpec{Namespace: "default", Name: "holders", UID: "uid-holders", Image: image}
	for i, g := range grants {
		container := dockerd.ContainerSpec{
			Name:        fmt.Sprintf("c%03d", i),
			Env:         g.response.Envs,
			Annotations: g.response.Annotations,
		}
		for _, mount := range g.response.Mounts {
			container.Mounts = append(container.Mounts, dockerd.Mount{HostPath: mount.HostPath, ContainerPath: mount.ContainerPath})
		}
		spec.Containers = append(spec.Containers, container)
	}
	pod := dockerd.CreatePod(t, client, spec)
	t.Cleanup(func() { pod.Remove(t, client) })
	return pod
}

// keptExactly checks that the agent lists exactly the wanted allocations
// (by host directory) with the secrets and sockets Allocate returned, and
// that the socket root holds exactly their directories.
func keptExactly(t testing.TB, a *agenttest.Agent, want map[string]granted) error {
	listed := list(t, a)
	byDir := map[string]memifctlAllocation{}
	for _, allocation := range listed {
		byDir[allocation.HostDir] = allocation
	}
	for dir, g := range want {
		allocation, ok := byDir[dir]
		switch {
		case !ok:
			return fmt.Errorf("allocation of %s in %s lost", g.device, dir)
		case allocation.Secret != g.response.Envs[envSecret] || allocation.Secret != g.response.Annotations[annotationSecret]:
			return fmt.Errorf("allocation of %s in %s has another secret than Allocate returned", g.device, dir)
		case allocation.HostSocket != g.response.Annotations[annotationSocketHost]:
			return fmt.Errorf("allocation of %s: host socket %s, Allocate returned %s", g.device, allocation.HostSocket, g.response.Annotations[annotationSocketHost])
		case len(allocation.DeviceIDs) != 1 || allocation.DeviceIDs[0] != g.device:
			return fmt.Errorf("allocation in %s holds devices %v, want [%s]", dir, allocation.DeviceIDs, g.device)
		}
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			return fmt.Errorf("directory %s of granted %s: %v", dir, g.device, err)
		}
	}
	for dir, allocation := range byDir {
		if _, ok := want[dir]; !ok {
			return fmt.Errorf("allocation %s of %v is still listed, but its Allocate call failed", allocation.AllocationID, allocation.DeviceIDs)
		}
	}
	dirs, err := a.AllocationDirs()
	if err != nil {
		return err
	}
	for dir := range dirs {
		if _, ok := want[dir]; !ok {
			return fmt.Errorf("directory %s is left behind by a failed Allocate call", dir)
		}
	}
	return nil
}
