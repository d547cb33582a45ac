package allocation

import (
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// Resolve returns, without binding anything, the memifs of the unbound
// allocations that pod's containers prove to hold, as they will be once
// bound, ordered by container name and allocation ID. It answers for a pod
// kubelet has admitted before the event loop has seen it.
func (s *State) Resolve(pod podapi.Pod, containers []podapi.PodContainer) []dmapi.MemifInfo {
	s.mu.RLock()
	var infos []dmapi.MemifInfo
	for _, a := range s.allocations {
		if a.Bound() {
			continue
		}
		for _, container := range containers {
			if Match(a, s.resource, container) != matchNone {
				a.Pod, a.PodUID, a.ContainerName = pod.ID, pod.UID, container.Name
				infos = append(infos, a.Info())
				break
			}
		}
	}
	s.mu.RUnlock()
	sortByContainer(infos)
	return infos
}
