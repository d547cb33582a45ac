package allocation

import (
	"fmt"
	"slices"
	"strings"
	"time"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// Evidence of a container holding an allocation, strongest first.
const (
	matchNone = ""
	// matchMount: the allocation's host directory is mounted in the
	// container (Docker inspection).
	matchMount = "mount"
	// matchAnnotation: the container carries the allocation's host socket
	// annotation (runtime annotations or labels).
	matchAnnotation = "annotation"
	// matchDevices: kubelet's pod-resources assigns the container exactly
	// the allocation's device IDs; it is known before the container runs.
	matchDevices = "device IDs"
)

// Match tells how container proves it holds a, or matchNone.
func Match(a Allocation, resource string, container podapi.PodContainer) string {
	switch {
	case slices.Contains(container.MountSources, a.HostDir):
		return matchMount
	case a.HostSocket != "" && container.Annotations[dmapi.AnnotationSocketHost] == a.HostSocket:
		return matchAnnotation
	case sameDevices(container.DeviceIDs[resource], a.DeviceIDs) && !madeForAnother(a, container):
		return matchDevices
	}
	return matchNone
}

// madeForAnother tells whether the runtime shows container made for another
// allocation (kubelet asks Allocate once per container). pod-resources
// names pods, not their incarnations: until the runtime drops the
// containers of a pod deleted and re-created under the same name, the
// re-created pod's device IDs are merged onto the dead incarnation's
// containers, and binding on them would give the new allocation the dead
// pod's UID, and so its release.
func madeForAnother(a Allocation, container podapi.PodContainer) bool {
	socket := container.Annotations[dmapi.AnnotationSocketHost]
	return socket != "" && socket != a.HostSocket
}

func sameDevices(held, allocated []string) bool {
	if len(held) == 0 || len(held) != len(allocated) {
		return false
	}
	sortedHeld, sortedAllocated := slices.Clone(held), slices.Clone(allocated)
	slices.Sort(sortedHeld)
	slices.Sort(sortedAllocated)
	return slices.Equal(sortedHeld, sortedAllocated)
}

// heldBy tells whether a's binding is to pod (same ID, and same UID when
// both are known).
func heldBy(a Allocation, pod podapi.Pod) bool {
	return a.Pod == pod.ID && (a.PodUID == "" || pod.UID == "" || a.PodUID == pod.UID)
}

// learnsUID tells whether pod gives a's binding the UID it lacks: kubelet's
// pod-resources lists a pod without it, so a binding made before the
// runtime showed the pod has none.
func learnsUID(a Allocation, pod podapi.Pod) bool { return a.PodUID == "" && pod.UID != "" }

// Binding is one allocation bound to a pod, and the evidence.
type Binding struct {
	Allocation Allocation
	Evidence   string
}

// Bind binds to pod every allocation that one of its containers proves to
// hold. An allocation already bound to another pod is left alone. It
// returns the allocations newly bound (or whose container or pod UID became
// known).
func (s *State) Bind(pod podapi.Pod, containers []podapi.PodContainer) []Binding {
	s.mu.Lock()
	bindings := s.bindLocked(pod, containers)
	s.mu.Unlock()
	for _, b := range bindings {
		s.watchers.notify(dmapi.AllocationChange{Kind: dmapi.Bound, Memif: b.Allocation.Info()})
	}
	return bindings
}

func (s *State) bindLocked(pod podapi.Pod, containers []podapi.PodContainer) []Binding {
	var bindings []Binding
	for id, a := range s.allocations {
		if a.Bound() && !heldBy(a, pod) {
			continue
		}
		for _, container := range containers {
			evidence := Match(a, s.resource, container)
			if evidence == matchNone {
				continue
			}
			uid := pod.UID
			if evidence == matchDevices && container.RuntimeID == "" {
				// kubelet asks Allocate before it creates the pod's
				// sandbox, and pod-resources names pods, not their
				// incarnations: the UID the runtime gives a pod whose
				// container it does not show yet can be that of a deleted
				// pod of the same name. The container's mount tells it.
				uid = a.PodUID
			}
			if a.Bound() && a.ContainerName == container.Name && !learnsUID(a, podapi.Pod{ID: pod.ID, UID: uid}) {
				break
			}
			a.Pod, a.PodUID, a.ContainerName = pod.ID, uid, container.Name
			s.allocations[id] = a
			bindings = append(bindings, Binding{Allocation: a.clone(), Evidence: evidence})
			break
		}
	}
	sortBindings(bindings)
	return bindings
}

// PodAllocations returns every allocation bound to pod, ordered by ID: to
// this incarnation when pod's UID is known, so a binding that has no UID
// yet (made on kubelet's device IDs alone, possibly for a re-created pod of
// the same name) is not among them; the collection of what no live pod
// holds releases it once the pod is gone. The caller releases them with
// Remove once the vswitch side is gone.
func (s *State) PodAllocations(pod podapi.Pod) []Allocation {
	s.mu.RLock()
	var held []Allocation
	for _, a := range s.allocations {
		if a.Bound() && a.Pod == pod.ID && (pod.UID == "" || a.PodUID == pod.UID) {
			held = append(held, a.clone())
		}
	}
	s.mu.RUnlock()
	sortAllocations(held)
	return held
}

// Collected is an allocation a resync released, and why.
type Collected struct {
	Allocation Allocation
	Reason     string
}

// GonePod is a pod that holds allocations but is no longer alive, or was
// recreated with another UID, and why.
type GonePod struct {
	Pod    podapi.Pod
	Reason string
}

// Collect brings the state in line with the pods alive on the node: it
// binds what their evidence proves and releases every unbound allocation
// older than grace (never wired to the vswitch). Allocations bound to a pod
// that is gone (or was recreated with another UID) are kept: it returns
// those pods, for the caller to remove their vswitch side first and then
// release them. Call it only with a complete answer of the
// pod lister.
func (s *State) Collect(live []podapi.PodState, now time.Time, grace time.Duration) ([]Binding, []Collected, []GonePod) {
	s.mu.Lock()
	var bindings []Binding
	for _, pod := range live {
		bindings = append(bindings, s.bindLocked(pod.Pod, pod.Containers)...)
	}
	var collected []Collected
	goneByPod := map[podapi.Pod]string{}
	for id, a := range s.allocations {
		reason := collectReason(a, live, now, grace)
		if reason == "" {
			continue
		}
		if a.Bound() {
			goneByPod[podapi.Pod{ID: a.Pod, UID: a.PodUID}] = reason
			continue
		}
		s.removeLocked(id)
		collected = append(collected, Collected{Allocation: a, Reason: reason})
	}
	s.mu.Unlock()
	sortBindings(bindings)
	sortCollected(collected)
	for _, b := range bindings {
		s.watchers.notify(dmapi.AllocationChange{Kind: dmapi.Bound, Memif: b.Allocation.Info()})
	}
	for _, c := range collected {
		s.watchers.notify(dmapi.AllocationChange{Kind: dmapi.Released, Memif: c.Allocation.Info()})
	}
	return bindings, collected, sortedGonePods(goneByPod)
}

func sortedGonePods(reasons map[podapi.Pod]string) []GonePod {
	gone := make([]GonePod, 0, len(reasons))
	for pod, reason := range reasons {
		gone = append(gone, GonePod{Pod: pod, Reason: reason})
	}
	slices.SortFunc(gone, func(x, y GonePod) int { return strings.Compare(x.Pod.String(), y.Pod.String()) })
	return gone
}

// collectReason says why a must be released given the live pods, or "".
func collectReason(a Allocation, live []podapi.PodState, now time.Time, grace time.Duration) string {
	if a.ClaimUID != "" {
		// kubelet unprepares the claim when its pod is done, also after
		// its own restart; the runtime may not show the pod at all.
		return ""
	}
	if !a.Bound() {
		if age := now.Sub(a.AllocatedAt); age > grace {
			return fmt.Sprintf("no pod has been seen holding it for %s (grace period %s)", age.Round(time.Second), grace)
		}
		return ""
	}
	for _, pod := range live {
		if pod.Pod.ID != a.Pod {
			continue
		}
		if heldBy(a, pod.Pod) {
			return ""
		}
		return fmt.Sprintf("pod %s was recreated (uid %s, the allocation's was %s)", a.Pod, pod.Pod.UID, a.PodUID)
	}
	return fmt.Sprintf("pod %s (uid %s) is gone", a.Pod, a.PodUID)
}

func sortAllocations(list []Allocation) {
	slices.SortFunc(list, func(x, y Allocation) int { return strings.Compare(x.ID, y.ID) })
}

func sortBindings(list []Binding) {
	slices.SortFunc(list, func(x, y Binding) int { return strings.Compare(x.Allocation.ID, y.Allocation.ID) })
}

func sortCollected(list []Collected) {
	slices.SortFunc(list, func(x, y Collected) int { return strings.Compare(x.Allocation.ID, y.Allocation.ID) })
}

// BindClaim binds to pod the allocations of the claim with the given UID
// that are bound to no pod, or to pod without its UID: the claim's status
// names the pod it is reserved for. An allocation bound to another pod is
// left alone. It returns the allocations newly bound (or whose pod UID
// became known), ordered by ID.
func (s *State) BindClaim(claimUID string, pod podapi.Pod) []Allocation {
	if claimUID == "" || pod.ID == (podapi.PodID{}) {
		return nil
	}
	s.mu.Lock()
	var bound []Allocation
	for id, a := range s.allocations {
		if a.ClaimUID != claimUID || (a.Bound() && !(a.Pod == pod.ID && learnsUID(a, pod))) {
			continue
		}
		a.Pod, a.PodUID = pod.ID, pod.UID
		s.allocations[id] = a
		bound = append(bound, a.clone())
	}
	s.mu.Unlock()
	slices.SortFunc(bound, func(x, y Allocation) int { return strings.Compare(x.ID, y.ID) })
	for _, a := range bound {
		s.watchers.notify(dmapi.AllocationChange{Kind: dmapi.Bound, Memif: a.Info()})
	}
	return bound
}
