package demo

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	docker "github.com/fsouza/go-dockerclient"
	v1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/kubelet/cm/devicemanager"

	"github.com/contivpp/memif-agent/plugins/podmanager/dockerpods"
	"github.com/contivpp/memif-agent/test/kit/dockershim"
	"github.com/contivpp/memif-agent/test/kit/testpmd"
)

// podImage is the image every demo container runs: the pod-side rootfs
// skeleton, with the host's /usr bind-mounted.
const podImage = "memif-demo-pod:latest"

// dockerPod is a pod made in Docker: a sandbox and one app container.
type dockerPod struct {
	pod       *v1.Pod
	sandboxID string
	appID     string
}

// importPodImage makes podImage from testpmd's pod-side rootfs.
func importPodImage(client *docker.Client) error {
	rootfs, err := testpmd.PodRootfs()
	if err != nil {
		return err
	}
	err = client.ImportImage(docker.ImportImageOptions{
		Repository: "memif-demo-pod", Tag: "latest", Source: "-",
		InputStream: bytes.NewReader(rootfs), OutputStream: &bytes.Buffer{},
	})
	if err != nil {
		return fmt.Errorf("import the pod image %s: %w", podImage, err)
	}
	return nil
}

// createDockerPod starts the pod's sandbox and creates, without starting,
// its app container with what kubelet's device manager returned for it.
func createDockerPod(client *docker.Client, pod *v1.Pod, container string, opts *devicemanager.DeviceRunContainerOptions) (*dockerPod, error) {
	p := &dockerPod{pod: pod}
	sandbox, err := client.CreateContainer(docker.CreateContainerOptions{
		Name: shimPod(pod).ContainerName(dockerpods.SandboxContainerName),
		Config: &docker.Config{
			Image:  podImage,
			Cmd:    []string{"/bin/sleep", "infinity"},
			Labels: shimPod(pod).Labels(dockerpods.SandboxContainerName, dockerpods.DockerTypeSandbox),
		},
		HostConfig: &docker.HostConfig{NetworkMode: "none", Binds: testpmd.PodBinds()},
	})
	if err != nil {
		return nil, fmt.Errorf("create sandbox of pod %s: %w", pod.Name, err)
	}
	p.sandboxID = sandbox.ID
	if err := client.StartContainer(sandbox.ID, nil); err != nil {
		return p, fmt.Errorf("start sandbox of pod %s: %w", pod.Name, err)
	}
	app, err := client.CreateContainer(appContainerOptions(pod, container, sandbox.ID, opts))
	if err != nil {
		return p, fmt.Errorf("create container %s of pod %s: %w", container, pod.Name, err)
	}
	p.appID = app.ID
	return p, nil
}

// appContainerOptions is the container as dockershim makes it: kubelet's
// labels, envs and bind mounts from the device manager, its annotations as
// "annotation.<key>" labels, the pod side's command, no network.
func appContainerOptions(pod *v1.Pod, container, sandboxID string, opts *devicemanager.DeviceRunContainerOptions) docker.CreateContainerOptions {
	labels := shimPod(pod).Labels(container, dockerpods.DockerTypeContainer)
	labels[dockershim.LabelSandboxID] = sandboxID
	for _, annotation := range opts.Annotations {
		labels[dockerpods.AnnotationLabelPrefix+annotation.Name] = annotation.Value
	}
	env := make([]string, 0, len(opts.Envs))
	for _, e := range opts.Envs {
		env = append(env, e.Name+"="+e.Value)
	}
	sort.Strings(env)
	binds := testpmd.PodBinds()
	for _, mount := range opts.Mounts {
		bind := mount.HostPath + ":" + mount.ContainerPath
		if mount.ReadOnly {
			bind += ":ro"
		}
		binds = append(binds, bind)
	}
	return docker.CreateContainerOptions{
		Name: shimPod(pod).ContainerName(container),
		Config: &docker.Config{
			Image:  podImage,
			Cmd:    testpmd.PodCommand(),
			Env:    env,
			Labels: labels,
		},
		HostConfig: &docker.HostConfig{NetworkMode: "none", Binds: binds},
	}
}

// shimPod is what names the pod's containers.
func shimPod(pod *v1.Pod) dockershim.Pod {
	return dockershim.Pod{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
}

// startApp starts the pod side.
func (p *dockerPod) startApp(client *docker.Client) error {
	if err := client.StartContainer(p.appID, nil); err != nil {
		return fmt.Errorf("start the memif client of pod %s: %w", p.pod.Name, err)
	}
	return nil
}

// remove force-removes the app container, then the sandbox, as kubelet
// does when a pod is deleted.
func (p *dockerPod) remove(client *docker.Client) error {
	var errs []error
	for _, id := range []string{p.appID, p.sandboxID} {
		if id == "" {
			continue
		}
		if err := removeContainer(client, id); err != nil {
			errs = append(errs, fmt.Errorf("remove container %.12s of pod %s: %w", id, p.pod.Name, err))
		}
	}
	return errors.Join(errs...)
}

// removeRetryFor bounds the retries of removeContainer.
const removeRetryFor = time.Minute

// removeContainer force-removes container id. On a loaded machine dockerd
// answers two ways while the container is on its way out, which are asked
// again until they go away: it waits a fixed time for the exit event of the
// container it killed and gives up with "did not receive an exit event";
// and it refuses to kill a process that has exited but is not reaped yet
// ("is zombie and can not be killed").
func removeContainer(client *docker.Client, id string) error {
	deadline := time.Now().Add(removeRetryFor)
	for {
		err := client.RemoveContainer(docker.RemoveContainerOptions{ID: id, Force: true})
		var missing *docker.NoSuchContainer
		if err == nil || errors.As(err, &missing) {
			return nil
		}
		exiting := strings.Contains(err.Error(), "did not receive an exit event") || strings.Contains(err.Error(), "is zombie and can not be killed")
		if !exiting || time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// logs returns the app container's output (the pod side's testpmd).
func (p *dockerPod) logs(client *docker.Client) string {
	var out bytes.Buffer
	_ = client.Logs(docker.LogsOptions{Container: p.appID, Stdout: true, Stderr: true, OutputStream: &out, ErrorStream: &out, Tail: "40"})
	return out.String()
}
