package containerd

import (
	"context"
	"path/filepath"
	"testing"

	runtimev1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// kubelet's labels on sandboxes and containers.
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
)

// Mount is a bind mount of a host path into a container.
type Mount struct {
	HostPath      string
	ContainerPath string
}

// ContainerSpec is one app container, with what kubelet passes to the
// runtime from the device manager's answer: annotations and mounts.
type ContainerSpec struct {
	Name        string
	Annotations map[string]string
	Mounts      []Mount
}

// PodSpec describes a pod to run.
type PodSpec struct {
	Namespace  string
	Name       string
	UID        string
	Containers []ContainerSpec
}

// Pod is a pod run in the daemon: its sandbox and app containers.
type Pod struct {
	Spec      PodSpec
	SandboxID string
	// ContainerIDs maps an app container name to its runtime ID.
	ContainerIDs map[string]string
	daemon       *Daemon
}

// RunPod runs the pod's sandbox in the host network and creates and starts
// its containers, with the CRI calls and labels kubelet uses.
func (d *Daemon) RunPod(tb testing.TB, spec PodSpec) *Pod {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	labels := map[string]string{labelPodName: spec.Name, labelPodNamespace: spec.Namespace, labelPodUID: spec.UID}
	sandboxConfig := &runtimev1.PodSandboxConfig{
		Metadata:     &runtimev1.PodSandboxMetadata{Name: spec.Name, Namespace: spec.Namespace, Uid: spec.UID},
		Labels:       labels,
		LogDirectory: filepath.Join(d.dir, "logs", spec.UID),
		Linux: &runtimev1.LinuxPodSandboxConfig{SecurityContext: &runtimev1.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimev1.NamespaceOption{Network: runtimev1.NamespaceMode_NODE},
		}},
	}
	sandbox, err := d.runtime.RunPodSandbox(ctx, &runtimev1.RunPodSandboxRequest{Config: sandboxConfig})
	if err != nil {
		tb.Fatalf("run pod sandbox of %s/%s in %s: %v", spec.Namespace, spec.Name, d.Build.Name, err)
	}
	pod := &Pod{Spec: spec, SandboxID: sandbox.GetPodSandboxId(), ContainerIDs: map[string]string{}, daemon: d}
	for _, c := range spec.Containers {
		containerLabels := map[string]string{labelContainerName: c.Name}
		for key, value := range labels {
			containerLabels[key] = value
		}
		config := &runtimev1.ContainerConfig{
			Metadata:    &runtimev1.ContainerMetadata{Name: c.Name},
			Image:       &runtimev1.ImageSpec{Image: PauseImage},
			Labels:      containerLabels,
			Annotations: c.Annotations,
			LogPath:     c.Name + ".log",
		}
		for _, m := range c.Mounts {
			config.Mounts = append(config.Mounts, &runtimev1.Mount{HostPath: m.HostPath, ContainerPath: m.ContainerPath})
		}
		created, err := d.runtime.CreateContainer(ctx, &runtimev1.CreateContainerRequest{
			PodSandboxId: pod.SandboxID, Config: config, SandboxConfig: sandboxConfig,
		})
		if err != nil {
			tb.Fatalf("create container %s of %s/%s: %v", c.Name, spec.Namespace, spec.Name, err)
		}
		if _, err := d.runtime.StartContainer(ctx, &runtimev1.StartContainerRequest{ContainerId: created.GetContainerId()}); err != nil {
			tb.Fatalf("start container %s of %s/%s: %v", c.Name, spec.Namespace, spec.Name, err)
		}
		pod.ContainerIDs[c.Name] = created.GetContainerId()
	}
	return pod
}

// Stop stops the pod's app containers, then its sandbox, and leaves them
// listed: what kubelet leaves of a deleted or completed pod until its
// garbage collection removes them.
func (p *Pod) Stop(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	for name, id := range p.ContainerIDs {
		if _, err := p.daemon.runtime.StopContainer(ctx, &runtimev1.StopContainerRequest{ContainerId: id}); err != nil {
			tb.Fatalf("stop container %s of %s/%s: %v", name, p.Spec.Namespace, p.Spec.Name, err)
		}
	}
	if _, err := p.daemon.runtime.StopPodSandbox(ctx, &runtimev1.StopPodSandboxRequest{PodSandboxId: p.SandboxID}); err != nil {
		tb.Fatalf("stop sandbox of %s/%s: %v", p.Spec.Namespace, p.Spec.Name, err)
	}
}

// Remove removes the pod as kubelet does once it is deleted: its
// containers, then its sandbox.
func (p *Pod) Remove(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	for name, id := range p.ContainerIDs {
		if _, err := p.daemon.runtime.RemoveContainer(ctx, &runtimev1.RemoveContainerRequest{ContainerId: id}); err != nil {
			tb.Fatalf("remove container %s of %s/%s: %v", name, p.Spec.Namespace, p.Spec.Name, err)
		}
	}
	if err := removeSandbox(ctx, p.daemon.runtime, p.SandboxID); err != nil {
		tb.Fatalf("remove sandbox of %s/%s: %v", p.Spec.Namespace, p.Spec.Name, err)
	}
}
