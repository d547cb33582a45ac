package dockerpods

import (
	"errors"
	"fmt"
	"strings"

	kubetypes "k8s.io/kubelet/pkg/types"

	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// kubelet's container labels: the pod and container names as kubelet
// itself defines them (k8s.io/kubelet/pkg/types), and the ones only
// dockershim wrote. This is the project's one copy; test kits that make
// kubelet-style containers use it too.
const (
	LabelPodName       = kubetypes.KubernetesPodNameLabel
	LabelPodNamespace  = kubetypes.KubernetesPodNamespaceLabel
	LabelPodUID        = kubetypes.KubernetesPodUIDLabel
	LabelContainerName = kubetypes.KubernetesContainerNameLabel
	LabelDockerType    = "io.kubernetes.docker.type"
	// AnnotationLabelPrefix prefixes the container annotations kubelet
	// stores as labels.
	AnnotationLabelPrefix = "annotation."

	// DockerTypeSandbox marks a pod's sandbox container.
	DockerTypeSandbox = "podsandbox"
	// DockerTypeContainer marks an app container.
	DockerTypeContainer = "container"
	// SandboxContainerName is the container name kubelet gives sandboxes.
	SandboxContainerName = kubetypes.PodInfraContainerName
)

// ErrNotPodContainer is matched by the error of ParseLabels for a container
// that lacks kubelet's pod labels.
var ErrNotPodContainer = errors.New("container is not a kubelet pod container")

// ContainerLabels is what kubelet's labels say about one container.
type ContainerLabels struct {
	Pod podapi.Pod
	// ContainerName is the name in the pod spec; SandboxContainerName for
	// the sandbox.
	ContainerName string
	// Sandbox is true for the pod's sandbox container.
	Sandbox bool
	// Annotations are the container annotations, without the label prefix.
	Annotations map[string]string
}

// ParseLabels reads kubelet's labels of one container. A container without
// a pod UID, name or namespace, or with an invalid pod name, is not a pod
// container; an app container must name itself.
func ParseLabels(labels map[string]string) (ContainerLabels, error) {
	uid := labels[LabelPodUID]
	if uid == "" {
		return ContainerLabels{}, fmt.Errorf("label %s missing: %w", LabelPodUID, ErrNotPodContainer)
	}
	id, err := podapi.ParsePodID(labels[LabelPodNamespace] + "/" + labels[LabelPodName])
	if err != nil {
		return ContainerLabels{}, fmt.Errorf("labels %s and %s of pod uid %s: %v: %w",
			LabelPodNamespace, LabelPodName, uid, err, ErrNotPodContainer)
	}
	parsed := ContainerLabels{
		Pod:           podapi.Pod{ID: id, UID: uid},
		ContainerName: labels[LabelContainerName],
		Annotations:   annotations(labels),
	}
	switch labels[LabelDockerType] {
	case DockerTypeSandbox:
		parsed.Sandbox = true
	case DockerTypeContainer:
	case "":
		// Labels written before kubelet marked the container type: the
		// sandbox is known by its reserved container name.
		parsed.Sandbox = parsed.ContainerName == SandboxContainerName
	default:
		return ContainerLabels{}, fmt.Errorf("label %s of pod %s is %q, want %q or %q: %w",
			LabelDockerType, id, labels[LabelDockerType], DockerTypeSandbox, DockerTypeContainer, ErrNotPodContainer)
	}
	if !parsed.Sandbox && parsed.ContainerName == "" {
		return ContainerLabels{}, fmt.Errorf("app container of pod %s lacks label %s: %w",
			id, LabelContainerName, ErrNotPodContainer)
	}
	return parsed, nil
}

// annotations returns the "annotation.<key>" labels by key; nil when none.
func annotations(labels map[string]string) map[string]string {
	var found map[string]string
	for label, value := range labels {
		key, ok := strings.CutPrefix(label, AnnotationLabelPrefix)
		if !ok || key == "" {
			continue
		}
		if found == nil {
			found = map[string]string{}
		}
		found[key] = value
	}
	return found
}
