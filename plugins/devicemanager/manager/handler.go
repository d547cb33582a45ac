package manager

import (
	"cmp"
	"errors"
	"fmt"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/checkpoint"
	"github.com/contivpp/memif-agent/plugins/devicemanager/deviceinfo"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

var _ controllerapi.EventHandler = (*Manager)(nil)

// String implements controllerapi.EventHandler.
func (m *Manager) String() string { return "devicemanager" }

// HandlesEvent implements controllerapi.EventHandler: allocations, pod
// lifecycle and resyncs.
func (m *Manager) HandlesEvent(event controllerapi.Event) bool {
	if event.Spec().Method.IsResync() {
		return true
	}
	switch event.(type) {
	case *dmapi.AllocateDevice, *podapi.AddPod, *podapi.DeletePod, *podapi.LivePods, *ReleaseAllocation, *ReleaseAbandoned,
		*dmapi.PrepareClaim, *dmapi.UnprepareClaim, *dmapi.SyncClaims:
		return true
	}
	return false
}

// Update implements controllerapi.EventHandler.
func (m *Manager) Update(event controllerapi.Event, ops controllerapi.EventOperations) (string, error) {
	m.remover.activity.begin()
	defer m.remover.activity.end()
	switch ev := event.(type) {
	case *dmapi.AllocateDevice:
		return m.allocate(ev, ops)
	case *podapi.AddPod:
		return m.bindPod(ev)
	case *podapi.DeletePod:
		return m.releasePodLater(ev, ops)
	case *ReleaseAllocation:
		return m.release(ev)
	case *ReleaseAbandoned:
		return m.releaseAbandoned(ev)
	case *podapi.LivePods:
		return m.collect(ev, ops)
	case *dmapi.PrepareClaim:
		return m.prepareClaim(ev, ops)
	case *dmapi.UnprepareClaim:
		return m.unprepareClaim(ev, ops)
	case *dmapi.SyncClaims:
		return m.syncClaims(ev, ops)
	}
	return "", nil
}

// Revert implements controllerapi.EventHandler: a reverted AllocateDevice or
// PrepareClaim leaves no directory and no allocation behind.
func (m *Manager) Revert(event controllerapi.Event) error {
	if claim, ok := event.(*dmapi.PrepareClaim); ok {
		return m.revertPrepareClaim(claim)
	}
	ev, ok := event.(*dmapi.AllocateDevice)
	if !ok || ev.AllocationID == "" {
		return nil
	}
	a, err := m.state.Remove(ev.AllocationID)
	if err != nil {
		return fmt.Errorf("revert allocation: %w", err)
	}
	ev.AllocationID, ev.Mounts = "", nil
	clear(ev.Envs)
	clear(ev.Annotations)
	return errors.Join(m.removeDir(a), m.restoreTakenOver(ev), m.persistRecoverable(a))
}

func (m *Manager) allocate(ev *dmapi.AllocateDevice, ops controllerapi.EventOperations) (string, error) {
	a, err := m.takeOverAndAllocate(ev, ops)
	if err != nil {
		if len(ev.TakenOver) > 0 {
			err = errors.Join(err, m.restoreTakenOver(ev), m.persistRecoverable())
		}
		return "", err
	}
	m.fillEvent(ev, a)
	if len(ev.TakenOver) > 0 {
		return fmt.Sprintf("allocated %s, taking over %d allocations", a, len(ev.TakenOver)), nil
	}
	return fmt.Sprintf("allocated %s", a), nil
}

// takeOverAndAllocate releases the holders of ev's devices and makes the
// new allocation.
func (m *Manager) takeOverAndAllocate(ev *dmapi.AllocateDevice, ops controllerapi.EventOperations) (allocation.Allocation, error) {
	if err := m.takeOver(ev, ops); err != nil {
		return allocation.Allocation{}, err
	}
	a, err := m.newAllocation(ev.ResourceName, ev.DeviceIDs)
	if err != nil {
		m.metrics.countError(errorKind(err))
	}
	return a, err
}

// newAllocation makes the directory, records the allocation and persists
// it; on failure nothing of it remains.
func (m *Manager) newAllocation(resource string, deviceIDs []string) (allocation.Allocation, error) {
	if resource != m.cfg.ResourceName {
		return allocation.Allocation{}, fmt.Errorf("resource %q is not served here (serving %q): %w", resource, m.cfg.ResourceName, dmapi.ErrInvalidRequest)
	}
	if err := m.state.CheckRequest(deviceIDs); err != nil {
		return allocation.Allocation{}, err
	}
	a, err := m.prepareAllocation(deviceIDs)
	if err != nil {
		return allocation.Allocation{}, err
	}
	// Before the record, whose failure removes them with the directory.
	if err := m.writeDeviceInfo(a); err != nil {
		return allocation.Allocation{}, fmt.Errorf("refusing the allocation of %v: %w", deviceIDs, err)
	}
	return a, m.record(a)
}

// record makes a's directory, adds it to the state and persists it; on
// failure nothing of it remains.
func (m *Manager) record(a allocation.Allocation) error {
	if err := m.makeDir(a); err != nil {
		return err
	}
	if err := m.state.Add(a); err != nil {
		return errors.Join(err, m.removeDir(a))
	}
	if err := m.persistRecoverable(a); err != nil {
		_, removeErr := m.state.Remove(a.ID)
		return errors.Join(err, removeErr, m.removeDir(a))
	}
	return nil
}

func (m *Manager) prepareAllocation(deviceIDs []string) (allocation.Allocation, error) {
	id, err := allocation.NewID(deviceIDs)
	if err != nil {
		return allocation.Allocation{}, err
	}
	secret, err := allocation.NewSecret()
	if err != nil {
		return allocation.Allocation{}, err
	}
	dir := m.hostDir(id)
	return allocation.Allocation{
		ID: id, DeviceIDs: append([]string(nil), deviceIDs...), HostDir: dir,
		HostSocket: m.cfg.HostSocket(dir), ContainerSocket: m.cfg.ContainerSocket(),
		Secret: secret, AllocatedAt: m.opts.Now().UTC(),
	}, nil
}

func (m *Manager) fillEvent(ev *dmapi.AllocateDevice, a allocation.Allocation) {
	ev.AllocationID = a.ID
	ev.Envs[dmapi.EnvMemifSocket] = a.ContainerSocket
	ev.Envs[dmapi.EnvMemifSecret] = a.Secret
	ev.Annotations[dmapi.AnnotationSocketHost] = a.HostSocket
	ev.Annotations[dmapi.AnnotationSocketContainer] = a.ContainerSocket
	ev.Annotations[dmapi.AnnotationSecret] = a.Secret
	ev.Mounts = append(ev.Mounts, dmapi.Mount{HostPath: a.HostDir, ContainerPath: m.cfg.ContainerDir})
}

func (m *Manager) bindPod(ev *podapi.AddPod) (string, error) {
	bindings := m.bind(ev.Pod, ev.Containers)
	if len(bindings) == 0 {
		return "", nil
	}
	// Saved before the event's transaction wires the pod's memifs in VPP,
	// although the tracker announces the pod again after a restart: the
	// startup resync runs first and wires bound allocations only, so a
	// binding lost to the agent's crash would have it delete the running
	// pod's memifs until that announcement. Buffered is enough: only the
	// node's restart loses it, which takes VPP's memifs and the pod's
	// containers with it.
	return fmt.Sprintf("bound %d allocations to %s", len(bindings), ev.Pod), m.persistRecoverable(boundAllocations(bindings)...)
}

// bind binds the allocations the containers prove pod holds and logs each.
func (m *Manager) bind(pod podapi.Pod, containers []podapi.PodContainer) []allocation.Binding {
	bindings := m.state.Bind(pod, containers)
	for _, b := range bindings {
		m.log.InfoS("allocation bound to its pod", allocationPairs(b.Allocation, "evidence", b.Evidence)...)
	}
	return bindings
}

// releasePodLater releases the pod's allocations in follow-ups, which run
// once this DeletePod's transaction, removing the vswitch side, is
// committed: the socket directory must outlive the interface listening on
// it.
func (m *Manager) releasePodLater(ev *podapi.DeletePod, ops controllerapi.EventOperations) (string, error) {
	held := m.state.PodAllocations(ev.Pod)
	if len(held) == 0 {
		return "", nil
	}
	var errs []error
	for _, a := range held {
		release := &ReleaseAllocation{AllocationID: a.ID, Reason: fmt.Sprintf("pod %s deleted", ev.Pod)}
		if err := ops.PushFollowUp(release); err != nil {
			errs = append(errs, fmt.Errorf("release %s of deleted pod %s (the next collection releases it): %w", a.ID, ev.Pod, err))
		}
	}
	return fmt.Sprintf("releasing %d allocations of %s once its vswitch side is removed", len(held), ev.Pod), errors.Join(errs...)
}

// Resync implements controllerapi.EventHandler: load the checkpoint once,
// after a node restart recover from kubelet's device checkpoint what it
// lost (reboot.go), and make sure every kept allocation has its
// directory. What no live pod holds is collected on the LivePods decision
// the resync asks the pod tracker for.
func (m *Manager) Resync(_ controllerapi.Event, _ controllerapi.EventOperations) error {
	var errs []error
	var bootID string
	if !m.loaded {
		m.load()
		var rebooted bool
		if bootID, rebooted = m.checkBoot(); rebooted {
			m.recoverFromKubelet()
		}
		errs = append(errs, m.findUnexplainedDirs(), m.ensureDeviceInfo())
		m.loaded = true
		close(m.restored)
	}
	if m.opts.LivePods != nil {
		m.opts.LivePods.RequestLivePods()
	}
	errs = append(errs, m.ensureDirs(m.state.List()))
	if err := m.persist(); err != nil {
		return errors.Join(append(errs, err)...)
	}
	m.markBoot(bootID)
	return errors.Join(errs...)
}

// load restores the checkpoint. Damage loses only what it covers: the
// rest is restored, the damaged files are moved aside for the operator,
// and every loss is logged with its count and counted. A checkpoint that
// cannot be read at all is moved aside too and the manager goes on empty:
// pods keep running, and no directory is removed for it (see
// findUnexplainedDirs).
func (m *Manager) load() {
	if removed, err := m.checkpoint.RemoveTemps(); err != nil {
		m.log.WarnS("temporary files a crash left beside the checkpoint not removed", "removed", removed, "err", err)
	} else if len(removed) > 0 {
		m.log.InfoS("removed the temporary files a crash left beside the checkpoint", "files", removed)
	}
	data, err := checkpoint.Load(m.cfg.CheckpointPath)
	var damage *checkpoint.DamageError
	var torn *checkpoint.TornTailError
	switch {
	case errors.As(err, &damage):
		m.metrics.countCheckpointLoss(damage.Lost)
		m.log.ErrorS(err, "CHECKPOINT DAMAGED: going on with the allocations the damage did not cover",
			append([]any{"lost", damage.Lost, "kept", len(data.Allocations)}, m.moveCheckpointAside()...)...)
	case errors.As(err, &torn):
		// Usable, but perhaps not whole.
		m.metrics.countCheckpointLoss(1)
		m.log.ErrorS(torn, "checkpoint torn: going on with the allocations before the tear (after a node restart: records of kubelet's allocations not yet synced, recovered from kubelet's device checkpoint)")
	case err != nil:
		m.metrics.countError("checkpoint-unreadable")
		m.log.ErrorS(err, "CHECKPOINT LOST: starting with no allocation", m.moveCheckpointAside()...)
		return
	}
	skipped := m.state.Restore(allocation.FromCheckpoint(data))
	for _, err := range skipped {
		m.metrics.countError("checkpoint-conflict")
		m.log.ErrorS(err, "checkpoint allocation not restored")
	}
	m.log.InfoS("restored the allocations from the checkpoint", "allocations", len(m.state.List()), "checkpoint", m.cfg.CheckpointPath)
}

// moveCheckpointAside keeps a damaged checkpoint for the operator before
// the next save replaces it; it says where, as log key/value pairs.
func (m *Manager) moveCheckpointAside() []any {
	aside, err := checkpoint.MoveAside(m.cfg.CheckpointPath, m.opts.Now())
	if err != nil {
		return []any{"moveAsideErr", err}
	}
	return []any{"movedTo", aside}
}

// collect brings the allocations in line with live, the pod tracker's
// decision of which pods are alive: the manager decides nothing about a
// pod's liveness itself. It binds what the evidence proves, releases the
// unbound allocations older than unbound-grace-period that no live pod
// holds, and for each pod not in live holding bound ones (wired to the
// vswitch) pushes a DeletePod follow-up: the vswitch side is removed
// first, then the DeletePod releases the allocations. Once the node is
// handed over it changes nothing: the successor owns the allocations.
func (m *Manager) collect(live *podapi.LivePods, ops controllerapi.EventOperations) (string, error) {
	if m.handedOver.Load() {
		return "", nil
	}
	m.liveMu.Lock()
	m.live = live
	m.liveMu.Unlock()
	bindings, collected, gone := m.state.Collect(live.Pods, m.opts.Now(), m.cfg.UnboundGracePeriod.Duration())
	m.settleUnexplainedDirs(live)
	for _, b := range bindings {
		m.log.InfoS("allocation bound to its pod", allocationPairs(b.Allocation, "evidence", b.Evidence)...)
	}
	var errs []error
	for _, c := range collected {
		m.log.InfoS("allocation collected", allocationPairs(c.Allocation, "reason", c.Reason)...)
		errs = append(errs, m.removeDir(c.Allocation))
	}
	errs = append(errs, m.deleteGonePods(gone, ops))
	if len(bindings) > 0 || len(collected) > 0 {
		changed := boundAllocations(bindings)
		for _, c := range collected {
			changed = append(changed, c.Allocation)
		}
		errs = append(errs, m.persistRecoverable(changed...))
	}
	if len(bindings) == 0 && len(collected) == 0 && len(gone) == 0 {
		return "", errors.Join(errs...)
	}
	return fmt.Sprintf("bound %d, collected %d allocations, deleting %d gone pods", len(bindings), len(collected), len(gone)), errors.Join(errs...)
}

func (m *Manager) deleteGonePods(gone []allocation.GonePod, ops controllerapi.EventOperations) error {
	var errs []error
	for _, g := range gone {
		m.log.InfoS("deleting a gone pod", "pod", g.Pod, "reason", g.Reason)
		if err := ops.PushFollowUp(&podapi.DeletePod{Pod: g.Pod}); err != nil {
			errs = append(errs, fmt.Errorf("delete gone pod %s (the next collection retries): %w", g.Pod, err))
		}
	}
	return errors.Join(errs...)
}

// release releases one allocation; one already released is not an error.
func (m *Manager) release(ev *ReleaseAllocation) (string, error) {
	if ev.removed != nil {
		m.log.InfoS("removed the directory of an allocation", allocationPairs(*ev.removed, "reason", ev.Reason)...)
		return fmt.Sprintf("removed the directory of %s", ev.removed.ID), m.removeDir(*ev.removed)
	}
	a, err := m.state.Remove(ev.AllocationID)
	if errors.Is(err, allocation.ErrUnknownAllocation) {
		return "", nil // already released, for example by a resync
	}
	m.log.InfoS("allocation released", allocationPairs(a, "reason", ev.Reason)...)
	return fmt.Sprintf("released %s", a.ID), errors.Join(m.removeDir(a), m.persistRecoverable(a))
}

// releaseAbandoned releases the allocations of a failed kubelet call and
// persists once; one already released (taken over by a later container
// request of the same call) is skipped. Of the directories it cannot
// remove it reports the first and how many: a call may have made
// thousands.
func (m *Manager) releaseAbandoned(ev *ReleaseAbandoned) (string, error) {
	var failed int
	var released []allocation.Allocation
	var firstErr error
	for _, id := range ev.AllocationIDs {
		a, err := m.state.Remove(id)
		if err != nil {
			continue // already released
		}
		released = append(released, a)
		if err := m.removeDir(a); err != nil {
			failed++
			firstErr = cmp.Or(firstErr, err)
		}
	}
	if len(released) == 0 {
		return "", nil
	}
	m.log.InfoS("released allocations never handed to a container", "allocations", len(released), "reason", ev.Reason)
	var dirErr error
	if failed > 0 {
		dirErr = fmt.Errorf("%d of the %d directories were not removed; the first: %w", failed, len(released), firstErr)
	}
	return fmt.Sprintf("released %d abandoned allocations", len(released)), errors.Join(dirErr, m.persistRecoverable(released...))
}

// persist persists the allocations durably.
func (m *Manager) persist() error { return m.save(m.checkpoint.Save) }

// save persists the allocations with save (a checkpoint.Writer's).
func (m *Manager) save(save func(checkpoint.Data) error) error {
	if err := save(allocation.ToCheckpoint(m.state.List())); err != nil {
		m.metrics.countError("checkpoint-write")
		return err
	}
	return nil
}

// errorKind names an allocation failure for the errors metric.
func errorKind(err error) string {
	switch {
	case errors.Is(err, dmapi.ErrInvalidRequest):
		return "allocate-invalid-request"
	case errors.Is(err, dmapi.ErrDeviceInUse):
		return "allocate-device-in-use"
	case errors.Is(err, errDir):
		return "allocate-directory"
	case errors.Is(err, deviceinfo.ErrFile):
		return "allocate-device-info"
	}
	return "allocate-other"
}
