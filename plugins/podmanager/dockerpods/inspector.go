package dockerpods

import (
	"context"
	"fmt"
	"sort"

	docker "github.com/fsouza/go-dockerclient"

	"github.com/contivpp/memif-agent/internal/logs"
	"github.com/contivpp/memif-agent/plugins/networks/memifspec"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

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
	log    logs.Logger
}

// NewInspector returns an Inspector over client; log hears of containers
// whose kubelet labels do not parse (they are skipped); nil: nothing is
// logged.
func NewInspector(client *docker.Client, log logs.Logger) *Inspector {
	if log == nil {
		log = logs.Discard()
	}
	return &Inspector{client: client, log: log}
}

// ListPods returns every pod that has a container in Docker, ordered by pod
// ID; see GroupPods.
func (i *Inspector) ListPods(ctx context.Context) ([]podapi.PodState, error) {
	return i.list(ctx, LabelPodUID)
}

// GetPod returns the pod with the given ID and whether any of its
// containers exists; see GroupPods for a pod with several UIDs.
func (i *Inspector) GetPod(ctx context.Context, id podapi.PodID) (podapi.PodState, bool, error) {
	pods, err := i.list(ctx, LabelPodNamespace+"="+id.Namespace, LabelPodName+"="+id.Name)
	if err != nil || len(pods) == 0 {
		return podapi.PodState{}, false, err
	}
	return pods[0], true, nil
}

// list lists the containers that carry every label filter (Docker ANDs
// them).
func (i *Inspector) list(ctx context.Context, labelFilters ...string) ([]podapi.PodState, error) {
	containers, err := i.client.ListContainers(docker.ListContainersOptions{
		All:     true,
		Filters: map[string][]string{"label": labelFilters},
		Context: ctx,
	})
	if err != nil {
		return nil, fmt.Errorf("list docker containers with labels %v at %s: %w", labelFilters, i.client.Endpoint(), err)
	}
	return GroupPods(containers, i.log), nil
}

// GroupPods groups kubelet containers into pods, one per pod ID, ordered by
// pod ID; app containers are ordered by name and runtime ID. When containers
// of several incarnations of a pod (UIDs) are left, the pod is the
// incarnation with the most recently created container: kubelet creates a
// new incarnation only after the old one was deleted. A container whose
// labels do not parse is logged to log and skipped.
func GroupPods(containers []docker.APIContainers, log logs.Logger) []podapi.PodState {
	byUID := map[string]*podapi.PodState{}
	newest := map[string]int64{}
	for _, container := range containers {
		labels, err := ParseLabels(container.Labels)
		if err != nil {
			log.WarnS("skipping a docker container", "container", container.ID, "err", err)
			continue
		}
		pod, found := byUID[labels.Pod.UID]
		if !found {
			pod = &podapi.PodState{Pod: labels.Pod}
			byUID[labels.Pod.UID] = pod
		}
		newest[labels.Pod.UID] = max(newest[labels.Pod.UID], container.Created)
		if labels.Sandbox {
			// The sandbox's "annotation." labels are the pod's.
			pod.Pod.Networks = labels.Annotations[memifspec.AnnotationKey]
		} else {
			pod.Containers = append(pod.Containers, podContainer(container, labels))
		}
	}
	return podapi.LatestIncarnations(byUID, newest)
}

func podContainer(container docker.APIContainers, labels ContainerLabels) podapi.PodContainer {
	var sources []string
	for _, mount := range container.Mounts {
		if mount.Source != "" {
			sources = append(sources, mount.Source)
		}
	}
	sort.Strings(sources)
	return podapi.PodContainer{
		Name:         labels.ContainerName,
		RuntimeID:    container.ID,
		MountSources: sources,
		Annotations:  labels.Annotations,
	}
}
