package dockerpods

import (
	"context"
	"fmt"
	"sort"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// Warnf reports something skipped that an operator may want to know about.
type Warnf func(format string, args ...any)

// NewClient returns a Docker client for endpoint (for example
// "unix:///var/run/docker.sock"); an empty endpoint follows DOCKER_HOST and
// the other DOCKER_* variables, like the docker CLI.
func NewClient(endpoint string) (*docker.Client, error) {
	if endpoint == "" {
		client, err := docker.NewClientFromEnv()
		if err != nil {
			return nil, fmt.Errorf("create docker client from DOCKER_HOST: %w", err)
		}
		return client, nil
	}
	client, err := docker.NewClient(endpoint)
	if err != nil {
		return nil, fmt.Errorf("create docker client for endpoint %q (want unix:///path or tcp://host:port): %w", endpoint, err)
	}
	return client, nil
}

// Inspector lists kubelet pods in Docker. It is safe for concurrent use.
type Inspector struct {
	client *docker.Client
	warnf  Warnf
}

// NewInspector returns an Inspector over client; warnf hears of containers
// whose kubelet labels do not parse (they are skipped).
func NewInspector(client *docker.Client, warnf Warnf) *Inspector {
	return &Inspector{client: client, warnf: warnf}
}

// ListPods returns every pod that has a container in Docker, ordered by pod
// ID and UID.
func (i *Inspector) ListPods(ctx context.Context) ([]api.PodState, error) {
	return i.list(ctx, LabelPodUID)
}

// GetPod returns the pod with the given UID and whether any of its
// containers exists.
func (i *Inspector) GetPod(ctx context.Context, uid string) (api.PodState, bool, error) {
	pods, err := i.list(ctx, LabelPodUID+"="+uid)
	if err != nil || len(pods) == 0 {
		return api.PodState{}, false, err
	}
	return pods[0], true, nil
}

func (i *Inspector) list(ctx context.Context, labelFilter string) ([]api.PodState, error) {
	containers, err := i.client.ListContainers(docker.ListContainersOptions{
		All:     true,
		Filters: map[string][]string{"label": {labelFilter}},
		Context: ctx,
	})
	if err != nil {
		return nil, fmt.Errorf("list docker containers with label %s at %s: %w", labelFilter, i.client.Endpoint(), err)
	}
	return GroupPods(containers, i.warnf), nil
}

// GroupPods groups kubelet containers into pods, one per pod UID, ordered by
// pod ID and UID; app containers are ordered by name and runtime ID. A
// container whose labels do not parse is reported to warnf and skipped.
func GroupPods(containers []docker.APIContainers, warnf Warnf) []api.PodState {
	byUID := map[string]*api.PodState{}
	for _, container := range containers {
		labels, err := ParseLabels(container.Labels)
		if err != nil {
			if warnf != nil {
				warnf("skipping docker container %s: %v", container.ID, err)
			}
			continue
		}
		pod, found := byUID[labels.Pod.UID]
		if !found {
			pod = &api.PodState{Pod: labels.Pod}
			byUID[labels.Pod.UID] = pod
		}
		if !labels.Sandbox {
			pod.Containers = append(pod.Containers, podContainer(container, labels))
		}
	}
	pods := make([]api.PodState, 0, len(byUID))
	for _, pod := range byUID {
		sort.Slice(pod.Containers, func(a, b int) bool {
			left, right := pod.Containers[a], pod.Containers[b]
			if left.Name != right.Name {
				return left.Name < right.Name
			}
			return left.RuntimeID < right.RuntimeID
		})
		pods = append(pods, *pod)
	}
	sort.Slice(pods, func(a, b int) bool {
		if pods[a].Pod.ID != pods[b].Pod.ID {
			return pods[a].Pod.ID.String() < pods[b].Pod.ID.String()
		}
		return pods[a].Pod.UID < pods[b].Pod.UID
	})
	return pods
}

func podContainer(container docker.APIContainers, labels ContainerLabels) api.PodContainer {
	var sources []string
	for _, mount := range container.Mounts {
		if mount.Source != "" {
			sources = append(sources, mount.Source)
		}
	}
	sort.Strings(sources)
	return api.PodContainer{
		Name:         labels.ContainerName,
		RuntimeID:    container.ID,
		MountSources: sources,
		Annotations:  labels.Annotations,
	}
}
