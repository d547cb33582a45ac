package api

import (
	"fmt"
	"strings"
)

// PodID identifies a pod on the node by namespace and name.
type PodID struct {
	Namespace string
	Name      string
}

// String returns "namespace/name".
func (p PodID) String() string { return p.Namespace + "/" + p.Name }

// ParsePodID parses "namespace/name". Both parts must be non-empty and the
// name must not contain another slash.
func ParsePodID(text string) (PodID, error) {
	namespace, name, found := strings.Cut(text, "/")
	if !found || namespace == "" || name == "" || strings.Contains(name, "/") {
		return PodID{}, fmt.Errorf("invalid pod %q: want NAMESPACE/NAME", text)
	}
	return PodID{Namespace: namespace, Name: name}, nil
}

// Pod is one incarnation of a pod on the node.
type Pod struct {
	ID PodID
	// UID is the pod UID kubelet assigned; it changes when a pod of the same
	// name is recreated.
	UID string
	// Networks is the value of the pod's memif.contivpp.io/networks
	// annotation, which the runtime's sandbox carries (the CRI sandbox's
	// annotations, Docker's "annotation." labels of the sandbox
	// container); empty when the pod has none or the runtime did not
	// list its sandbox. A string, so that a Pod still compares with ==.
	Networks string
}

// String returns "namespace/name (uid)".
func (p Pod) String() string { return fmt.Sprintf("%s (uid %s)", p.ID, p.UID) }

// PodContainer is what the runtime and kubelet tell about one container of a
// pod: the evidence the device manager uses to bind allocations to it.
type PodContainer struct {
	// Name is the container name in the pod spec.
	Name string
	// RuntimeID is the runtime's container ID, when the container exists.
	RuntimeID string
	// MountSources are the host paths bind-mounted into the container.
	MountSources []string
	// Annotations are the container annotations kubelet passed to the
	// runtime (from the device plugin's Allocate among others).
	Annotations map[string]string
	// DeviceIDs maps an extended resource name to the device IDs kubelet
	// assigned to the container (from the pod-resources API), each list
	// sorted: they are a set, which kubelet lists in no fixed order.
	DeviceIDs map[string][]string
}

// PodState is one live pod with its containers.
type PodState struct {
	Pod        Pod
	Containers []PodContainer
}
