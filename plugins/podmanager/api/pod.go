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
}

// String returns "namespace/name (uid)".
func (p Pod) String() string { return fmt.Sprintf("%s (uid %s)", p.ID, p.UID) }
