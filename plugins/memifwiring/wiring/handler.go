package wiring

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gogo/protobuf/proto"
	vpp_interfaces "github.com/ligato/vpp-agent/api/models/vpp/interfaces"
	vpp_l2 "github.com/ligato/vpp-agent/api/models/vpp/l2"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// wiredPod is what the handler put into transactions for one pod.
type wiredPod struct {
	uid  string
	keys []string
}

// undo restores the records of the pods an Update changed as they were.
type undo struct {
	event controllerapi.Event
	// before is each pod's record; nil when it had none.
	before map[podapi.PodID]*wiredPod
}

// Handler is the controller event handler of the vswitch-side memif
// interfaces. Its methods are called only from the controller event loop.
type Handler struct {
	devices dmapi.DeviceManagerAPI
	config  Config
	wired   map[podapi.PodID]wiredPod
	last    *undo
}

var _ controllerapi.EventHandler = (*Handler)(nil)

// NewHandler returns a handler reading devices; config must be valid.
func NewHandler(devices dmapi.DeviceManagerAPI, config Config) *Handler {
	return &Handler{devices: devices, config: config, wired: map[podapi.PodID]wiredPod{}}
}

// String implements controllerapi.EventHandler.
func (h *Handler) String() string { return "memifwiring" }

// HandlesEvent implements controllerapi.EventHandler: resyncs, AddPod,
// DeletePod, and AllocateDevice: the loop asks before any handler runs,
// and the device manager may take devices over from wired pods in it.
func (h *Handler) HandlesEvent(event controllerapi.Event) bool {
	switch event.(type) {
	case podapi.AddPodEvent, podapi.DeletePodEvent, *dmapi.AllocateDevice:
		return true
	}
	return event.Method().IsResync()
}

// Resync implements controllerapi.EventHandler: it wires every allocation
// bound to a pod and forgets every other interface it put. ListAllocations
// reads the device manager's state only, as the event loop requires.
func (h *Handler) Resync(_ controllerapi.Event, _ int, txn controllerapi.EventOperations) error {
	byPod := map[podapi.PodID][]dmapi.MemifInfo{}
	for _, memif := range h.devices.ListAllocations() {
		if memif.Pod.Name != "" {
			byPod[memif.Pod] = append(byPod[memif.Pod], memif)
		}
	}
	wired := make(map[podapi.PodID]wiredPod, len(byPod))
	for pod, memifs := range byPod {
		values := Render(pod, memifs, h.config)
		putAll(txn, values)
		wired[pod] = wiredPod{uid: memifs[0].PodUID, keys: slices.Sorted(maps.Keys(values))}
	}
	for pod, old := range h.wired {
		deleteStale(txn, old.keys, wired[pod].keys)
	}
	h.wired = wired
	h.last = nil
	h.putBridgeDomain(txn)
	// The cross-connects depend on the configuration only: every resync
	// puts them all, and the KV scheduler holds each until both of its
	// memifs exist.
	putAll(txn, RenderXConnects(h.config))
	return nil
}

// Update implements controllerapi.EventHandler.
func (h *Handler) Update(event controllerapi.Event, txn controllerapi.EventOperations) (string, error) {
	h.last = &undo{event: event, before: map[podapi.PodID]*wiredPod{}}
	var change string
	var err error
	switch ev := event.(type) {
	case *dmapi.AllocateDevice:
		if len(ev.TakenOver) == 0 {
			return "", nil
		}
		change, err = h.rewireTakenOver(ev.TakenOver, txn)
	case podapi.AddPodEvent:
		pod := ev.GetAddPod().Pod
		h.remember(pod.ID)
		change, err = h.wire(pod, txn)
	case podapi.DeletePodEvent:
		pod := ev.GetDeletePod().Pod
		h.remember(pod.ID)
		change = h.unwire(pod, txn)
	default:
		return "", fmt.Errorf("memif wiring got event %s it does not handle", event.GetName())
	}
	if err == nil {
		h.putBridgeDomain(txn)
	}
	return change, err
}

// putBridgeDomain puts the configured bridge domain with every interface
// the handler wired.
func (h *Handler) putBridgeDomain(txn controllerapi.Transaction) {
	if h.config.BridgeDomain == "" {
		return
	}
	var keys []string
	for _, pod := range h.wired {
		keys = append(keys, pod.keys...)
	}
	txn.Put(vpp_l2.BridgeDomainKey(h.config.BridgeDomain), RenderBridgeDomain(h.config.BridgeDomain, keys))
}

// rewireTakenOver wires again the pods that held memifs the device manager
// just released for kubelet's new Allocate: their interfaces on those
// memifs are deleted before the directories are removed.
func (h *Handler) rewireTakenOver(takenOver []dmapi.MemifInfo, txn controllerapi.EventOperations) (string, error) {
	var changes []string
	for _, memif := range takenOver {
		if memif.Pod.Name == "" {
			continue
		}
		if _, done := h.last.before[memif.Pod]; done {
			continue
		}
		h.remember(memif.Pod)
		change, err := h.wire(podapi.Pod{ID: memif.Pod, UID: memif.PodUID}, txn)
		if err != nil {
			return "", err
		}
		changes = append(changes, fmt.Sprintf("%s: %s", memif.Pod, change))
	}
	return strings.Join(changes, "; "), nil
}

// Revert implements controllerapi.EventHandler: it restores the record of the
// pod the reverted Update changed. The transaction itself is discarded by
// the controller.
func (h *Handler) Revert(event controllerapi.Event) error {
	if h.last == nil || h.last.event != event {
		return nil
	}
	for pod, before := range h.last.before {
		if before != nil {
			h.wired[pod] = *before
		} else {
			delete(h.wired, pod)
		}
	}
	h.last = nil
	return nil
}

// remember records pod's record before the current Update changes it.
func (h *Handler) remember(pod podapi.PodID) {
	if before, existed := h.wired[pod]; existed {
		h.last.before[pod] = &before
	} else {
		h.last.before[pod] = nil
	}
}

func (h *Handler) wire(pod podapi.Pod, txn controllerapi.EventOperations) (string, error) {
	memifs, err := h.podMemifs(pod)
	if err != nil {
		return "", err
	}
	values := Render(pod.ID, memifs, h.config)
	keys := slices.Sorted(maps.Keys(values))
	deleteStale(txn, h.wired[pod.ID].keys, keys)
	putAll(txn, values)
	if len(keys) == 0 {
		delete(h.wired, pod.ID)
		return "", nil
	}
	h.wired[pod.ID] = wiredPod{uid: pod.UID, keys: keys}
	return "put " + interfaceNames(keys), nil
}

// unwire deletes what was put for pod, unless it was put for another
// incarnation of the same name (a late DeletePod of a replaced pod).
func (h *Handler) unwire(pod podapi.Pod, txn controllerapi.EventOperations) string {
	wired, ok := h.wired[pod.ID]
	if !ok || (pod.UID != "" && wired.uid != "" && pod.UID != wired.uid) {
		return ""
	}
	for _, key := range wired.keys {
		txn.Delete(key)
	}
	delete(h.wired, pod.ID)
	return "deleted " + interfaceNames(wired.keys)
}

// podMemifs returns the pod's memifs bound to this incarnation of it; a pod
// without a memif has nothing to wire. It reads the bound state only: the
// handler runs on the event loop, which must not wait on the runtime or
// kubelet, and an unbound allocation would be unwired by the next resync.
func (h *Handler) podMemifs(pod podapi.Pod) ([]dmapi.MemifInfo, error) {
	memifs, err := h.devices.BoundPodMemifs(pod.ID)
	if errors.Is(err, dmapi.ErrNoMemif) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get memifs of pod %s: %w", pod, err)
	}
	return slices.DeleteFunc(memifs, func(memif dmapi.MemifInfo) bool {
		return pod.UID != "" && memif.PodUID != "" && memif.PodUID != pod.UID
	}), nil
}

func putAll(txn controllerapi.Transaction, values map[string]proto.Message) {
	for key, value := range values {
		txn.Put(key, value)
	}
}

// deleteStale deletes the keys of old that are not in current (sorted).
func deleteStale(txn controllerapi.Transaction, old, current []string) {
	for _, key := range old {
		if _, found := slices.BinarySearch(current, key); !found {
			txn.Delete(key)
		}
	}
}

func interfaceNames(keys []string) string {
	names := make([]string, len(keys))
	for i, key := range keys {
		names[i] = vpp_interfaces.ModelInterface.StripKeyPrefix(key)
	}
	return strings.Join(names, ", ")
}
