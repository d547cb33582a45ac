package dockershim

import (
	"fmt"

	"github.com/contivpp/memif-agent/plugins/podmanager/dockerpods"
)

// LabelSandboxID is the label dockershim put on an app container naming
// its sandbox; the agent does not read it.
const LabelSandboxID = "io.kubernetes.sandbox.id"

// Pod is what names a pod's containers.
type Pod struct {
	Namespace string
	Name      string
	UID       string
}

// Labels are the labels of the pod's container (dockerpods.SandboxContainerName for the
// sandbox) of dockerType.
func (p Pod) Labels(container, dockerType string) map[string]string {
	return map[string]string{
		dockerpods.LabelPodName:       p.Name,
		dockerpods.LabelPodNamespace:  p.Namespace,
		dockerpods.LabelPodUID:        p.UID,
		dockerpods.LabelContainerName: container,
		dockerpods.LabelDockerType:    dockerType,
	}
}

// ContainerName is the Docker name of the pod's container, first attempt:
// k8s_<container>_<pod>_<namespace>_<uid>_0.
func (p Pod) ContainerName(container string) string {
	return fmt.Sprintf("k8s_%s_%s_%s_%s_0", container, p.Name, p.Namespace, p.UID)
}
