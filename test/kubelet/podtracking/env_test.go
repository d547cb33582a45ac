package podtracking_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	docker "github.com/fsouza/go-dockerclient"
	v1 "k8s.io/api/core/v1"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/internal/inprocess"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmplugin "github.com/contivpp/memif-agent/plugins/devicemanager"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/config"
	"github.com/contivpp/memif-agent/plugins/podmanager"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
	"github.com/contivpp/memif-agent/test/kit/dockerd"
	"github.com/contivpp/memif-agent/test/kit/eventlog"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

const (
	resource    = dmapi.DefaultResourceName
	deviceCount = 32
	// waitTimeout bounds every wait; it is a failure deadline, not an
	// asserted duration.
	waitTimeout = 90 * time.Second
)

// env is one node: the kubelet's device manager and pod-resources server, a
// private dockerd, and the directories the agent keeps its state in.
type env struct {
	ctx                context.Context
	kubelet            *kubelettest.Kubelet
	daemon             *dockerd.Daemon
	docker             *docker.Client
	image              string
	podResourcesSocket string
	socketRoot         string
	checkpointPath     string
	// devices is how many devices the agent serves; fewer than the pods
	// makes kubelet hand a freed device to the next pod.
	devices int
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	e := &env{ctx: ctx, daemon: dockerd.Start(tb), devices: deviceCount}
	e.docker = e.daemon.Client(tb)
	e.image = dockerd.ImportSleeperImage(tb, e.docker)
	// Short paths: unix sockets must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "pt")
	if err != nil {
		tb.Fatalf("create state directory: %v", err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	e.podResourcesSocket = filepath.Join(dir, "pod-resources.sock")
	e.socketRoot = filepath.Join(dir, "memif")
	e.checkpointPath = filepath.Join(dir, "checkpoint.json")
	e.kubelet, err = kubelettest.Start(ctx, e.podResourcesSocket)
	if err != nil {
		tb.Fatalf("start kubelet: %v", err)
	}
	tb.Cleanup(func() {
		if err := e.kubelet.Stop(); err != nil {
			tb.Errorf("stop kubelet: %v", err)
		}
	})
	return e
}

// agent is the agent in the test's process (inprocess), on the node's
// kubelet and dockerd: its pod manager reads Docker and kubelet's
// pod-resources, as on a node with cri-dockerd.
type agent struct {
	*inprocess.Agent
	// pushed is what the pod manager pushed into the loop, in order.
	pushed *eventlog.Log
}

// trackerPeriod is the pod manager's reconcile-period: long, so that a
// comparison of the sources comes from what the test does (a Docker event,
// kubelet asked again, RequestLivePods), never from a tick.
const trackerPeriod = time.Hour

// startAgent starts the agent and waits until kubelet sees its devices. The
// agent is stopped at the end of the test unless stopped before.
func (e *env) startAgent(tb testing.TB) *agent {
	tb.Helper()
	devices := config.Default()
	devices.DeviceCount = e.devices
	devices.SocketRoot = e.socketRoot
	devices.CheckpointPath = e.checkpointPath
	devices.DeviceInfoDir = filepath.Join(filepath.Dir(e.checkpointPath), "devinfo")
	if devices.PluginDir+"/" != kubelettest.PluginDir {
		tb.Fatalf("the default plugin-dir %s is not the kubelet's %s", devices.PluginDir, kubelettest.PluginDir)
	}
	pods := podmanager.DefaultConfig()
	pods.Runtime = podmanager.RuntimeDocker
	pods.DockerEndpoint = e.daemon.Endpoint()
	pods.DockerReconnectMinBackoff = configfile.Duration(20 * time.Millisecond)
	pods.DockerReconnectMaxBackoff = configfile.Duration(500 * time.Millisecond)
	pods.PodResourcesSocket = e.podResourcesSocket
	pods.ReconcilePeriod = configfile.Duration(trackerPeriod)
	a := &agent{pushed: eventlog.New()}
	a.Agent = inprocess.Start(tb, inprocess.Options{
		Configs:   map[string]any{dmplugin.PluginName: devices, podmanager.PluginName: pods},
		PodEvents: a.pushed,
	})
	ctx, cancel := context.WithTimeout(e.ctx, waitTimeout)
	defer cancel()
	if err := e.kubelet.WaitForCapacity(ctx, resource, int64(e.devices)); err != nil {
		tb.Fatalf("agent did not register with kubelet: %v", err)
	}
	return a
}

// reconcile has the pod manager compare both sources with the pods it
// announced, and waits for the LivePods that comparison pushes.
func reconcile(tb testing.TB, a *agent) {
	tb.Helper()
	before := a.pushed.Count(isLivePods)
	a.PodManager.RequestLivePods()
	poll.Until(tb, waitTimeout, "LivePods after RequestLivePods", func() error {
		if a.pushed.Count(isLivePods) == before {
			return errors.New("no LivePods pushed since the request")
		}
		return nil
	})
}

func isLivePods(event controllerapi.Event) bool {
	_, ok := event.(*podapi.LivePods)
	return ok
}

// kubePod is a pod admitted by kubelet and made in Docker.
type kubePod struct {
	spec   *v1.Pod
	docker *dockerd.Pod
	// env is the envs kubelet's device manager handed the runtime.
	env map[string]string
}

// admit admits a pod asking one memif in container c0, as kubelet does.
func (e *env) admit(tb testing.TB, name string) *v1.Pod {
	tb.Helper()
	pod := kubelettest.NewPod(name, resource, 1)
	if err := e.kubelet.AllocatePod(e.ctx, pod); err != nil {
		tb.Fatalf("admit pod %s: %v", name, err)
	}
	return pod
}

// createContainers makes the admitted pod in Docker with what kubelet's
// device manager hands the runtime: envs, annotations (stored as labels, as
// dockershim does) and mounts. The containers are created, not started.
func (e *env) createContainers(tb testing.TB, pod *v1.Pod, autoRemove bool) *kubePod {
	tb.Helper()
	options, err := e.kubelet.ContainerOptions(e.ctx, pod)
	if err != nil {
		tb.Fatalf("container options of %s: %v", pod.Name, err)
	}
	spec := dockerd.PodSpec{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), Image: e.image, AutoRemove: autoRemove}
	created := &kubePod{spec: pod, env: map[string]string{}}
	for _, container := range pod.Spec.Containers {
		opts := options[container.Name]
		c := dockerd.ContainerSpec{Name: container.Name, Env: map[string]string{}, Annotations: map[string]string{}}
		for _, env := range opts.Envs {
			c.Env[env.Name] = env.Value
			created.env[env.Name] = env.Value
		}
		for _, annotation := range opts.Annotations {
			c.Annotations[annotation.Name] = annotation.Value
		}
		for _, mount := range opts.Mounts {
			c.Mounts = append(c.Mounts, dockerd.Mount{HostPath: mount.HostPath, ContainerPath: mount.ContainerPath, ReadOnly: mount.ReadOnly})
		}
		spec.Containers = append(spec.Containers, c)
	}
	created.docker = dockerd.CreatePod(tb, e.docker, spec)
	return created
}

// runPod admits a pod and runs it in Docker.
func (e *env) runPod(tb testing.TB, name string, autoRemove bool) *kubePod {
	tb.Helper()
	pod := e.createContainers(tb, e.admit(tb, name), autoRemove)
	pod.docker.StartContainers(tb, e.docker)
	return pod
}

// deletePod deletes the pod as kubelet does: the pod leaves the active
// pods, then its containers are removed.
func (e *env) deletePod(tb testing.TB, pod *kubePod) {
	tb.Helper()
	e.kubelet.RemovePod(pod.spec.UID)
	pod.docker.Remove(tb, e.docker)
}

func podID(name string) podapi.PodID {
	return podapi.PodID{Namespace: kubelettest.PodNamespace, Name: name}
}

// boundMemif waits until the agent has bound the pod's memif to the pod's
// UID and returns it.
func boundMemif(tb testing.TB, a *agent, pod *v1.Pod) dmapi.MemifInfo {
	tb.Helper()
	var info dmapi.MemifInfo
	poll.Until(tb, waitTimeout, "memif of "+pod.Name+" bound", func() error {
		for _, allocation := range a.DeviceManager.ListAllocations() {
			if allocation.Pod == podID(pod.Name) && allocation.PodUID == string(pod.UID) {
				info = allocation
				return nil
			}
		}
		return fmt.Errorf("no allocation bound to %s (uid %s)", pod.Name, pod.UID)
	})
	return info
}

// released waits until no allocation holds the given one's devices and its
// directory is gone.
func released(tb testing.TB, a *agent, info dmapi.MemifInfo) {
	tb.Helper()
	poll.Until(tb, waitTimeout, "allocation "+info.AllocationID+" released", func() error {
		for _, allocation := range a.DeviceManager.ListAllocations() {
			if allocation.AllocationID == info.AllocationID {
				return errors.New("allocation still listed")
			}
		}
		if _, err := os.Stat(info.HostDir); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("directory %s still there (%v)", info.HostDir, err)
		}
		return nil
	})
}
