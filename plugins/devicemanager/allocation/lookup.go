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
	sortByContainer(infos)
	return infos, nil
}

// sortByContainer orders a pod's memifs by container name, then allocation
// ID: the order the device manager API promises.
func sortByContainer(infos []dmapi.MemifInfo) {
	slices.SortFunc(infos, func(x, y dmapi.MemifInfo) int {
		if c := strings.Compare(x.ContainerName, y.ContainerName); c != 0 {
			return c
		}
		return strings.Compare(x.AllocationID, y.AllocationID)
	})
}

// ClaimAllocations returns the allocations prepared for the ResourceClaim
// with the given UID, ordered by request name.
func (s *State) ClaimAllocations(claimUID string) []Allocation {
	if claimUID == "" {
		return nil
	}
	s.mu.RLock()
	var held []Allocation
	for _, a := range s.allocations {
		if a.ClaimUID == claimUID {
			held = append(held, a.clone())
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(held, func(x, y Allocation) int { return strings.Compare(x.Request, y.Request) })
	return held
}
