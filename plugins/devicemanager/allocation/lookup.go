package allocation

import (
	"slices"
	"strings"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// PodMemifs returns every memif bound to pod, ordered by container name and
// then allocation ID, or a *dmapi.NoMemifError.
func (s *State) PodMemifs(pod podapi.PodID) ([]dmapi.MemifInfo, error) {
	s.mu.RLock()
	var infos []dmapi.MemifInfo
	for _, a := range s.allocations {
		if a.Pod == pod {
			infos = append(infos, a.Info())
		}
	}
	s.mu.RUnlock()
	if len(infos) == 0 {
		return nil, &dmapi.NoMemifError{Pod: pod}
	}
	slices.SortFunc(infos, func(x, y dmapi.MemifInfo) int {
		if c := strings.Compare(x.ContainerName, y.ContainerName); c != 0 {
			return c
		}
		return strings.Compare(x.AllocationID, y.AllocationID)
	})
	return infos, nil
}

// PodMemifInfo returns the pod's first memif by container name, or a
// *dmapi.NoMemifError.
func (s *State) PodMemifInfo(pod podapi.PodID) (dmapi.MemifInfo, error) {
	infos, err := s.PodMemifs(pod)
	if err != nil {
		return dmapi.MemifInfo{}, err
	}
	return infos[0], nil
}
