package dockershim

import "fmt"

// kubelet's dockershim labels.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
	LabelDockerType    = "io.kubernetes.docker.type"
	LabelSandboxID     = "io.kubernetes.sandbox.id"
	// AnnotationPrefix prefixes the label that carries a container
	// annotation.
	AnnotationPrefix = "annotation."

	// DockerTypeSandbox and DockerTypeContainer are LabelDockerType's
	// values for a pod's sandbox and for its app containers.
	DockerTypeSandbox   = "podsandbox"
	DockerTypeContainer = "container"
	// SandboxName is the container name in the sandbox's labels and name.
	SandboxName = "POD"
)

// Pod is what names a pod's containers.
type Pod struct {
	Namespace string
	Name      string
	UID       string
}

// Labels are the labels of the pod's container (SandboxName for the
// sandbox) of dockerType.
func (p Pod) Labels(container, dockerType string) map[string]string {
	return map[string]string{
		LabelPodName:       p.Name,
		LabelPodNamespace:  p.Namespace,
		LabelPodUID:        p.UID,
		LabelContainerName: container,
		LabelDockerType:    dockerType,
	}
}

// ContainerName is the Docker name of the pod's container, first attempt:
// k8s_<container>_<pod>_<namespace>_<uid>_0.
func (p Pod) ContainerName(container string) string {
	return fmt.Sprintf("k8s_%s_%s_%s_%s_0", container, p.Name, p.Namespace, p.UID)
}
