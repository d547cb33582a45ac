package dockerd

import (
	"errors"
	"fmt"
	"sort"
	"testing"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/contivpp/memif-agent/plugins/podmanager/dockerpods"
	"github.com/contivpp/memif-agent/test/kit/dockershim"
)

// Mount is a bind mount of a host path into a container.
type Mount struct {
	HostPath      string
	ContainerPath string
	ReadOnly      bool
}

// ContainerSpec is one app container of a pod, with what kubelet would pass
// to the runtime: envs, annotations and mounts (for example those the device
// manager's GetDeviceRunContainerOptions returned).
type ContainerSpec struct {
	Name        string
	Env         map[string]string
	Annotations map[string]string
	Mounts      []Mount
}

// PodSpec describes a pod to create.
type PodSpec struct {
	Namespace  string
	Name       string
	UID        string
	Image      string
	Containers []ContainerSpec
	// AutoRemove makes Docker remove the pod's containers once they stop,
	// including when a restarting dockerd finds them stopped.
	AutoRemove bool
}

// Pod is a pod made in Docker: its sandbox and its app containers.
type Pod struct {
	Spec      PodSpec
	SandboxID string
	// ContainerIDs maps an app container name to its Docker ID.
	ContainerIDs map[string]string
}

// RunPod creates the pod and starts its sandbox and all its containers.
func RunPod(tb testing.TB, client *docker.Client, spec PodSpec) *Pod {
	tb.Helper()
	pod := CreatePod(tb, client, spec)
	pod.StartContainers(tb, client)
	return pod
}

// CreatePod starts the pod's sandbox and creates, without starting, its app
// containers: the state right after kubelet's CreateContainer calls.
func CreatePod(tb testing.TB, client *docker.Client, spec PodSpec) *Pod {
	tb.Helper()
	pod, err := createPod(client, spec)
	if err != nil {
		tb.Fatalf("create pod %s/%s: %v", spec.Namespace, spec.Name, err)
	}
	return pod
}

// StartContainers starts every app container of the pod, in name order.
func (p *Pod) StartContainers(tb testing.TB, client *docker.Client) {
	tb.Helper()
	for _, name := range p.containerNames() {
		if err := client.StartContainer(p.ContainerIDs[name], nil); err != nil {
			tb.Fatalf("start container %s of pod %s/%s: %v", name, p.Spec.Namespace, p.Spec.Name, err)
		}
	}
}

// StopContainers stops every app container of the pod and leaves it in
// Docker, exited, as the containers of a completed pod (a Job) are kept.
func (p *Pod) StopContainers(tb testing.TB, client *docker.Client) {
	tb.Helper()
	for _, name := range p.containerNames() {
		if err := client.StopContainer(p.ContainerIDs[name], 0); err != nil {
			tb.Fatalf("stop container %s of pod %s/%s: %v", name, p.Spec.Namespace, p.Spec.Name, err)
		}
	}
}

// Remove force-removes the pod's app containers, then its sandbox, the way
// kubelet does when a pod is deleted. Containers already gone are fine.
func (p *Pod) Remove(tb testing.TB, client *docker.Client) {
	tb.Helper()
	if err := p.remove(client); err != nil {
		tb.Fatalf("remove pod %s/%s: %v", p.Spec.Namespace, p.Spec.Name, err)
	}
}

func (p *Pod) remove(client *docker.Client) error {
	ids := make([]string, 0, len(p.ContainerIDs)+1)
	for _, name := range p.containerNames() {
		ids = append(ids, p.ContainerIDs[name])
	}
	ids = append(ids, p.SandboxID)
	for _, id := range ids {
		err := client.RemoveContainer(docker.RemoveContainerOptions{ID: id, Force: true})
		var missing *docker.NoSuchContainer
		if err != nil && !errors.As(err, &missing) {
			return fmt.Errorf("remove container %s: %w", id, err)
		}
	}
	return nil
}

func (p *Pod) containerNames() []string {
	names := make([]string, 0, len(p.ContainerIDs))
	for name := range p.ContainerIDs {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func createPod(client *docker.Client, spec PodSpec) (*Pod, error) {
	pod := &Pod{Spec: spec, ContainerIDs: map[string]string{}}
	sandbox, err := client.CreateContainer(sandboxOptions(spec))
	if err != nil {
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	pod.SandboxID = sandbox.ID
	if err := client.StartContainer(sandbox.ID, nil); err != nil {
		return pod, fmt.Errorf("start sandbox %s: %w", sandbox.ID, err)
	}
	for _, container := range spec.Containers {
		created, err := client.CreateContainer(containerOptions(spec, container, sandbox.ID))
		if err != nil {
			return pod, fmt.Errorf("create container %s: %w", container.Name, err)
		}
		pod.ContainerIDs[container.Name] = created.ID
	}
	return pod, nil
}

// shimPod is what names the pod's containers.
func shimPod(spec PodSpec) dockershim.Pod {
	return dockershim.Pod{Namespace: spec.Namespace, Name: spec.Name, UID: spec.UID}
}

func sandboxOptions(spec PodSpec) docker.CreateContainerOptions {
	return docker.CreateContainerOptions{
		Name: shimPod(spec).ContainerName(dockerpods.SandboxContainerName),
		Config: &docker.Config{
			Image:      spec.Image,
			Entrypoint: []string{SleeperPath},
			Labels:     shimPod(spec).Labels(dockerpods.SandboxContainerName, dockerpods.DockerTypeSandbox),
		},
		HostConfig: &docker.HostConfig{NetworkMode: "none", AutoRemove: spec.AutoRemove},
	}
}

func containerOptions(spec PodSpec, container ContainerSpec, sandboxID string) docker.CreateContainerOptions {
	labels := shimPod(spec).Labels(container.Name, dockerpods.DockerTypeContainer)
	labels[dockershim.LabelSandboxID] = sandboxID
	for key, value := range container.Annotations {
		labels[dockerpods.AnnotationLabelPrefix+key] = value
	}
	env := make([]string, 0, len(container.Env))
	for key, value := range container.Env {
		env = append(env, key+"="+value)
	}
	sort.Strings(env)
	binds := make([]string, 0, len(container.Mounts))
	for _, mount := range container.Mounts {
		bind := mount.HostPath + ":" + mount.ContainerPath
		if mount.ReadOnly {
			bind += ":ro"
		}
		binds = append(binds, bind)
	}
	return docker.CreateContainerOptions{
		Name: shimPod(spec).ContainerName(container.Name),
		Config: &docker.Config{
			Image:      spec.Image,
			Entrypoint: []string{SleeperPath},
			Env:        env,
			Labels:     labels,
		},
		HostConfig: &docker.HostConfig{Binds: binds, NetworkMode: "none", AutoRemove: spec.AutoRemove},
	}
}
