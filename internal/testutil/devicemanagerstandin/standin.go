// Package devicemanagerstandin is an in-memory stand-in for the device
// manager's DeviceManagerAPI, for tests of the packages that only read it
// (the node API, memifctl, memif wiring). The real device manager is tested
// in its own package against kubelet; this stand-in keeps its documented
// contract: copies out, ordering, *NoMemifError, and watchers dropped (their
// channel closed) when they fall behind.
//
// It owns only its own map; it must not be used by the agent itself.
package devicemanagerstandin

import (
	"context"
	"sort"
	"sync"

	devapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// DeviceManager implements devapi.DeviceManagerAPI over a map that tests
// fill with Allocate, Bind and Release. It is safe for concurrent use.
type DeviceManager struct {
	mu          sync.Mutex
	allocations map[string]devapi.MemifInfo
	watchers    map[chan<- devapi.AllocationChange]struct{}
}

var _ devapi.DeviceManagerAPI = (*DeviceManager)(nil)

// New returns an empty stand-in.
func New() *DeviceManager {
	return &DeviceManager{
		allocations: map[string]devapi.MemifInfo{},
		watchers:    map[chan<- devapi.AllocationChange]struct{}{},
	}
}

// Allocate records info as a new allocation (Allocated), or as the binding
// of an existing one to its pod (Bound).
func (d *DeviceManager) Allocate(info devapi.MemifInfo) {
	d.mu.Lock()
	defer d.mu.Unlock()
	kind := devapi.Allocated
	if _, ok := d.allocations[info.AllocationID]; ok {
		kind = devapi.Bound
	}
	info.DeviceIDs = append([]string(nil), info.DeviceIDs...)
	d.allocations[info.AllocationID] = info
	d.notifyLocked(devapi.AllocationChange{Kind: kind, Memif: info})
}

// Release removes the allocation; an unknown ID is ignored.
func (d *DeviceManager) Release(allocationID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	info, ok := d.allocations[allocationID]
	if !ok {
		return
	}
	delete(d.allocations, allocationID)
	d.notifyLocked(devapi.AllocationChange{Kind: devapi.Released, Memif: info})
}

// Watchers returns how many watchers are registered.
func (d *DeviceManager) Watchers() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.watchers)
}

// GetPodMemifInfo implements devapi.DeviceManagerAPI.
func (d *DeviceManager) GetPodMemifInfo(pod podapi.PodID) (devapi.MemifInfo, error) {
	infos, err := d.GetPodMemifs(pod)
	if err != nil {
		return devapi.MemifInfo{}, err
	}
	return infos[0], nil
}

// GetPodMemifs implements devapi.DeviceManagerAPI. The stand-in resolves
// no pod: it answers as BoundPodMemifs.
func (d *DeviceManager) GetPodMemifs(pod podapi.PodID) ([]devapi.MemifInfo, error) {
	return d.BoundPodMemifs(pod)
}

// BoundPodMemifs implements devapi.DeviceManagerAPI: allocations recorded
// with a pod.
func (d *DeviceManager) BoundPodMemifs(pod podapi.PodID) ([]devapi.MemifInfo, error) {
	var infos []devapi.MemifInfo
	for _, info := range d.ListAllocations() {
		if info.Pod == pod {
			infos = append(infos, info)
		}
	}
	if len(infos) == 0 {
		return nil, &devapi.NoMemifError{Pod: pod}
	}
	sort.SliceStable(infos, func(i, j int) bool { return infos[i].ContainerName < infos[j].ContainerName })
	return infos, nil
}

// ListAllocations implements devapi.DeviceManagerAPI.
func (d *DeviceManager) ListAllocations() []devapi.MemifInfo {
	d.mu.Lock()
	defer d.mu.Unlock()
	infos := make([]devapi.MemifInfo, 0, len(d.allocations))
	for _, info := range d.allocations {
		info.DeviceIDs = append([]string(nil), info.DeviceIDs...)
		infos = append(infos, info)
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].AllocationID < infos[j].AllocationID })
	return infos
}

// WatchAllocations implements devapi.DeviceManagerAPI: it registers the
// watcher and returns. When ctx ends, or the watcher is dropped for falling
// behind, changes is closed.
func (d *DeviceManager) WatchAllocations(ctx context.Context, changes chan<- devapi.AllocationChange) {
	d.mu.Lock()
	d.watchers[changes] = struct{}{}
	d.mu.Unlock()
	context.AfterFunc(ctx, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.dropLocked(changes)
	})
}

func (d *DeviceManager) dropLocked(watcher chan<- devapi.AllocationChange) {
	if _, ok := d.watchers[watcher]; ok {
		delete(d.watchers, watcher)
		close(watcher)
	}
}

func (d *DeviceManager) notifyLocked(change devapi.AllocationChange) {
	for watcher := range d.watchers {
		select {
		case watcher <- change:
		default:
			d.dropLocked(watcher)
		}
	}
}
