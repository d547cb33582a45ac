package allocation

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
)

// State holds the devices and allocations. Create it with NewState.
type State struct {
	resource string
	devices  pool
	// claimDevices are the devices handed out through ResourceClaims.
	claimDevices pool

	mu          sync.RWMutex
	allocations map[string]Allocation // by allocation ID
	holders     map[string]string     // device ID -> allocation ID

	watchers watchers
}

// pool is a fixed set of device IDs.
type pool struct {
	ids   []string
	known map[string]bool
}

func newPool(ids []string) pool {
	known := make(map[string]bool, len(ids))
	for _, id := range ids {
		known[id] = true
	}
	return pool{ids: slices.Clone(ids), known: known}
}

// rangeText names the pool's first and last device.
func (p pool) rangeText() string {
	if len(p.ids) == 0 {
		return "none"
	}
	return p.ids[0] + ".." + p.ids[len(p.ids)-1]
}

// NewState returns an empty state over the given devices of resource (kubelet's
// device plugin) and claimDevices (ResourceClaims; may be empty).
func NewState(resource string, devices, claimDevices []string) *State {
	return &State{
		resource:     resource,
		devices:      newPool(devices),
		claimDevices: newPool(claimDevices),
		allocations:  map[string]Allocation{},
		holders:      map[string]string{},
	}
}

// Devices returns every device ID of kubelet's device plugin, in order.
func (s *State) Devices() []string { return slices.Clone(s.devices.ids) }

// ClaimDevices returns every device ID handed out through ResourceClaims,
// in order.
func (s *State) ClaimDevices() []string { return slices.Clone(s.claimDevices.ids) }

// CheckRequest tells whether deviceIDs can be allocated now for kubelet's
// device plugin; the error is a *RequestError.
func (s *State) CheckRequest(deviceIDs []string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.checkRequestLocked(deviceIDs, s.devices, s.resource)
}

// CheckClaimRequest tells whether deviceIDs can be allocated now for a
// ResourceClaim; the error is a *RequestError.
func (s *State) CheckClaimRequest(deviceIDs []string) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.checkRequestLocked(deviceIDs, s.claimDevices, claimResource)
}

// claimResource names the claim devices in errors.
const claimResource = "ResourceClaims"

func (s *State) checkRequestLocked(deviceIDs []string, devices pool, resource string) error {
	refuse := func(problem RequestProblem, ids []string, holders []string) error {
		return &RequestError{Problem: problem, DeviceIDs: ids, Resource: resource, DeviceCount: len(devices.ids),
			DeviceRange: devices.rangeText(), Holders: holders}
	}
	if len(deviceIDs) == 0 {
		return refuse(EmptyRequest, nil, nil)
	}
	if len(deviceIDs) > len(devices.ids) {
		return refuse(TooManyDevices, slices.Clone(deviceIDs), nil)
	}
	var unknown, duplicate, inUse, holders []string
	seen := make(map[string]bool, len(deviceIDs))
	for _, id := range deviceIDs {
		switch {
		case !devices.known[id]:
			unknown = append(unknown, id)
		case seen[id]:
			duplicate = append(duplicate, id)
		case s.holders[id] != "":
			inUse = append(inUse, id)
			if holder := s.holders[id]; !slices.Contains(holders, holder) {
				holders = append(holders, holder)
			}
		}
		seen[id] = true
	}
	switch {
	case len(unknown) > 0:
		return refuse(UnknownDevices, unknown, nil)
	case len(duplicate) > 0:
		return refuse(DuplicateDevices, duplicate, nil)
	case len(inUse) > 0:
		return refuse(DevicesInUse, inUse, holders)
	}
	return nil
}

// Add records a new allocation after checking its devices (a *RequestError
// when they cannot be allocated).
func (s *State) Add(a Allocation) error {
	a = a.clone()
	s.mu.Lock()
	err := s.addLocked(a)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.watchers.notify(dmapi.AllocationChange{Kind: dmapi.Allocated, Memif: a.Info()})
	return nil
}

func (s *State) addLocked(a Allocation) error {
	if a.ID == "" {
		return fmt.Errorf("add allocation for devices %v: no allocation ID", a.DeviceIDs)
	}
	if _, exists := s.allocations[a.ID]; exists {
		return fmt.Errorf("add allocation %s: the ID is already in use", a.ID)
	}
	devices, resource := s.devices, s.resource
	if a.ClaimUID != "" {
		devices, resource = s.claimDevices, claimResource
	}
	if err := s.checkRequestLocked(a.DeviceIDs, devices, resource); err != nil {
		return err
	}
	s.allocations[a.ID] = a
	for _, id := range a.DeviceIDs {
		s.holders[id] = a.ID
	}
	return nil
}

// Restore replaces the state with allocations read from a checkpoint,
// without notifying watchers. An allocation whose devices conflict with an
// earlier one or are not devices of this node is skipped; the returned
// errors say which and why.
func (s *State) Restore(allocations []Allocation) []error {
	var skipped []error
	s.mu.Lock()
	defer s.mu.Unlock()
	s.allocations = map[string]Allocation{}
	s.holders = map[string]string{}
	for _, a := range allocations {
		if err := s.addLocked(a.clone()); err != nil {
			skipped = append(skipped, fmt.Errorf("skip checkpointed allocation %s: %w", a.ID, err))
		}
	}
	return skipped
}

// RestartGrace gives the unbound allocation allocationID the allocation
// time at, from which collection counts its unbound grace, and tells
// whether it did: false for a bound or unknown one. Watchers are not told:
// nothing they see changed.
func (s *State) RestartGrace(allocationID string, at time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.allocations[allocationID]
	if !ok || a.Bound() {
		return false
	}
	a.AllocatedAt = at
	s.allocations[allocationID] = a
	return true
}

// Remove releases an allocation and its devices; ErrUnknownAllocation when
// the state does not hold it.
func (s *State) Remove(allocationID string) (Allocation, error) {
	s.mu.Lock()
	a, ok := s.removeLocked(allocationID)
	s.mu.Unlock()
	if !ok {
		return Allocation{}, fmt.Errorf("release allocation %q: %w", allocationID, ErrUnknownAllocation)
	}
	s.watchers.notify(dmapi.AllocationChange{Kind: dmapi.Released, Memif: a.Info()})
	return a, nil
}

func (s *State) removeLocked(allocationID string) (Allocation, bool) {
	a, ok := s.allocations[allocationID]
	if !ok {
		return Allocation{}, false
	}
	delete(s.allocations, allocationID)
	for _, id := range a.DeviceIDs {
		if s.holders[id] == allocationID {
			delete(s.holders, id)
		}
	}
	return a, true
}

// Get returns the allocation allocationID, if the state holds it.
func (s *State) Get(allocationID string) (Allocation, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, ok := s.allocations[allocationID]
	return a.clone(), ok
}

// List returns every allocation ordered by ID.
func (s *State) List() []Allocation {
	s.mu.RLock()
	list := make([]Allocation, 0, len(s.allocations))
	for _, a := range s.allocations {
		list = append(list, a.clone())
	}
	s.mu.RUnlock()
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	return list
}

// ListInfo returns every allocation as the API shows it, ordered by ID.
func (s *State) ListInfo() []dmapi.MemifInfo {
	list := s.List()
	infos := make([]dmapi.MemifInfo, len(list))
	for i, a := range list {
		infos[i] = a.Info()
	}
	return infos
}

// Holders returns the allocations that hold any of deviceIDs, ordered by
// ID.
func (s *State) Holders(deviceIDs []string) []Allocation {
	s.mu.RLock()
	var holders []Allocation
	for _, id := range deviceIDs {
		holder, held := s.allocations[s.holders[id]]
		if held && !slices.ContainsFunc(holders, func(a Allocation) bool { return a.ID == holder.ID }) {
			holders = append(holders, holder.clone())
		}
	}
	s.mu.RUnlock()
	sortAllocations(holders)
	return holders
}
