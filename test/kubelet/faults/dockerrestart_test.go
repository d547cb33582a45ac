package faults

import (
	"context"
	"fmt"
	"os"
	"testing"

	docker "github.com/fsouza/go-dockerclient"
	v1 "k8s.io/api/core/v1"

	"github.com/contivpp/memif-agent/test/kit/dockerd"
	"github.com/contivpp/memif-agent/test/kit/poll"
	"github.com/contivpp/memif-agent/test/kubelet/kit/agenttest"
	"github.com/contivpp/memif-agent/test/kubelet/kit/kubelettest"
)

const dockerRestartRounds = 2

// node is kubelet, a private dockerd and the agent binary watching both.
type node struct {
	kubelet *kubelettest.Kubelet
	daemon  *dockerd.Daemon
	docker  *docker.Client
	image   string
	agent   *agenttest.Agent
}

// runningPod is a pod kubelet admitted and Docker runs.
type runningPod struct {
	spec    *v1.Pod
	docker  *dockerd.Pod
	hostDir string
	secret  string
}

// TestDockerRestartsWhilePodsComeAndGo stops and starts dockerd while pods
// are deleted and created: a pod deleted while dockerd is down, or just
// after it came back, is released all the same; the pods that stay keep
// their memif; new pods are bound.
func TestDockerRestartsWhilePodsComeAndGo(t *testing.T) {
	n := &node{daemon: dockerd.Start(t)}
	n.docker = n.daemon.Client(t)
	n.image = dockerd.ImportSleeperImage(t, n.docker)
	var podResources string
	n.kubelet, podResources = startKubelet(t)
	n.agent = agenttest.New(t, agenttest.Setup{
		DeviceCount: 16, PluginDir: kubelettest.PluginDir,
		PodResourcesSocket: podResources, DockerEndpoint: n.daemon.Endpoint(),
	})
	// No periodic reconciliation (reconcile-period 1h): what Docker's event
	// stream missed must be found when the agent reconnects to it.
	agenttest.WriteConfig(t, n.agent.ConfigDir, map[string]string{"podmanager.conf": fmt.Sprintf(
		"docker-endpoint: %s\npod-resources-socket: %s\nreconcile-period: 1h\ndocker-reconnect-max-backoff: 1s\n",
		n.daemon.Endpoint(), podResources)})
	n.agent.Start()
	waitCapacity(t, n.kubelet, 16)

	var kept []*runningPod
	for round := range dockerRestartRounds {
		goneWhileDown := n.runPod(t, fmt.Sprintf("down-%d", round), true)
		goneAfterStart := n.runPod(t, fmt.Sprintf("after-%d", round), false)
		stays := n.runPod(t, fmt.Sprintf("stays-%d", round), false)
		kept = append(kept, stays)

		n.daemon.Stop(t)
		// kubelet deletes the pod; Docker removes its stopped auto-remove
		// containers as it starts, before its API answers.
		n.kubelet.RemovePod(goneWhileDown.spec.UID)
		n.daemon.StartAgain(t)
		n.deletePod(t, goneAfterStart)
		kept = append(kept, n.runPod(t, fmt.Sprintf("new-%d", round), false))

		for _, gone := range []*runningPod{goneWhileDown, goneAfterStart} {
			n.waitReleased(t, gone)
		}
		for _, pod := range kept {
			n.waitBound(t, pod)
		}
	}
	n.agent.RequireHealthy()
}

// runPod admits a one-memif pod and runs it in Docker with what kubelet
// handed the runtime, then waits until the agent binds it.
func (n *node) runPod(t *testing.T, name string, autoRemove bool) *runningPod {
	t.Helper()
	spec := kubelettest.NewPod(name, resource, 1)
	options, err := n.kubelet.AdmitPod(context.Background(), spec)
	if err != nil {
		t.Fatalf("admit pod %s: %v", name, err)
	}
	opts := options["c0"]
	container := dockerd.ContainerSpec{Name: "c0", Env: map[string]string{}, Annotations: map[string]string{}}
	for _, env := range opts.Envs {
		container.Env[env.Name] = env.Value
	}
	for _, annotation := range opts.Annotations {
		container.Annotations[annotation.Name] = annotation.Value
	}
	for _, mount := range opts.Mounts {
		container.Mounts = append(container.Mounts, dockerd.Mount{HostPath: mount.HostPath, ContainerPath: mount.ContainerPath})
	}
	pod := &runningPod{spec: spec, secret: container.Env[envSecret], hostDir: container.Mounts[0].HostPath}
	pod.docker = dockerd.RunPod(t, n.docker, dockerd.PodSpec{
		Namespace: spec.Namespace, Name: name, UID: string(spec.UID), Image: n.image,
		AutoRemove: autoRemove, Containers: []dockerd.ContainerSpec{container},
	})
	n.waitBound(t, pod)
	return pod
}

// deletePod deletes the pod as kubelet does: out of the active pods, then
// its containers removed.
func (n *node) deletePod(t *testing.T, pod *runningPod) {
	t.Helper()
	n.kubelet.RemovePod(pod.spec.UID)
	pod.docker.Remove(t, n.docker)
}

func (n *node) waitBound(t *testing.T, pod *runningPod) {
	t.Helper()
	poll.Until(t, waitTimeout, "pod "+pod.spec.Name+" bound", func() error {
		for _, allocation := range list(t, n.agent) {
			if allocation.HostDir != pod.hostDir {
				continue
			}
			if allocation.PodName != pod.spec.Name || allocation.Secret != pod.secret {
				return fmt.Errorf("allocation in %s: pod %q, same secret %v", pod.hostDir, allocation.PodName, allocation.Secret == pod.secret)
			}
			return nil
		}
		return fmt.Errorf("no allocation in %s", pod.hostDir)
	})
}

func (n *node) waitReleased(t *testing.T, pod *runningPod) {
	t.Helper()
	poll.Until(t, waitTimeout, "pod "+pod.spec.Name+" released", func() error {
		for _, allocation := range list(t, n.agent) {
			if allocation.HostDir == pod.hostDir {
				return fmt.Errorf("allocation %s still listed", allocation.AllocationID)
			}
		}
		if _, err := os.Stat(pod.hostDir); !os.IsNotExist(err) {
			return fmt.Errorf("directory %s still there (%v)", pod.hostDir, err)
		}
		return nil
	})
}
