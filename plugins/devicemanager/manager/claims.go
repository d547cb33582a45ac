package manager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	"github.com/contivpp/memif-agent/plugins/devicemanager/allocation"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	podapi "github.com/contivpp/memif-agent/plugins/podmanager/api"
)

// ClaimPreparer returns the device manager as the DRA driver's
// dmapi.ClaimPreparer: each call becomes a blocking event on loop
// (PrepareClaim, UnprepareClaim, SyncClaims), and its answer is what the
// event's handlers left in it.
func (m *Manager) ClaimPreparer(loop controllerapi.EventLoop) dmapi.ClaimPreparer {
	return claimPreparer{m: m, loop: loop}
}

// claimPreparer is the device manager with the event loop its claims'
// events go through.
type claimPreparer struct {
	m    *Manager
	loop controllerapi.EventLoop
}

// Prepare implements dmapi.ClaimPreparer.
func (c claimPreparer) Prepare(ctx context.Context, claim dmapi.ClaimRef, pod podapi.Pod, requests []dmapi.ClaimRequest) ([]dmapi.PreparedRequest, error) {
	event := dmapi.NewPrepareClaim(claim.UID, claim.Namespace, claim.Name, pod, requests)
	if err := c.await(ctx, event, event.Result, "queue the claim for preparation (kubelet retries)"); err != nil {
		return nil, err
	}
	return event.Prepared, nil
}

// Unprepare implements dmapi.ClaimPreparer.
func (c claimPreparer) Unprepare(ctx context.Context, claim dmapi.ClaimRef) error {
	event := dmapi.NewUnprepareClaim(claim.UID, claim.Namespace, claim.Name)
	return c.await(ctx, event, event.Result, "queue the claim for release (kubelet retries)")
}

// Sync implements dmapi.ClaimPreparer.
func (c claimPreparer) Sync(ctx context.Context, live map[string]dmapi.ClaimStatus, listedAt time.Time) ([]string, error) {
	event := dmapi.NewSyncClaims(live, listedAt)
	if err := c.await(ctx, event, event.Result, "queue the claims' sync"); err != nil {
		return nil, err
	}
	return event.Released, nil
}

// PreparedClaims implements dmapi.ClaimPreparer.
func (c claimPreparer) PreparedClaims(ctx context.Context) ([]dmapi.ClaimRef, error) {
	return c.m.PreparedClaims(ctx)
}

// await pushes event and waits for its result; queueing names what a
// refused push failed to do.
func (c claimPreparer) await(ctx context.Context, event controllerapi.Event, result *controllerapi.Result, queueing string) error {
	if err := c.loop.PushEvent(event); err != nil {
		return fmt.Errorf("%s: %w", queueing, err)
	}
	return result.Wait(ctx)
}

// prepareClaim makes one allocation per request of the claim, bound to the
// claim's pod, as allocate does for kubelet's Allocate. A claim already
// prepared (kubelet retries, and prepares again after its restart) gets what
// it holds. On failure no allocation of the claim is left. A follow-up AddPod
// wires the vswitch side.
func (m *Manager) prepareClaim(ev *dmapi.PrepareClaim, ops controllerapi.EventOperations) (string, error) {
	if ev.ClaimUID == "" {
		return "", fmt.Errorf("prepare claim %s/%s: no claim UID: %w", ev.Namespace, ev.Name, dmapi.ErrInvalidRequest)
	}
	if held := m.state.ClaimAllocations(ev.ClaimUID); len(held) > 0 {
		ev.Prepared = prepared(held)
		return "", nil
	}
	var made []allocation.Allocation
	for _, request := range ev.Requests {
		a, err := m.newClaimAllocation(ev, request)
		if err != nil {
			m.metrics.countError(errorKind(err))
			return "", errors.Join(fmt.Errorf("prepare request %q of claim %s/%s: %w", request.Name, ev.Namespace, ev.Name, err),
				m.removeAllocations(made))
		}
		made = append(made, a)
	}
	ev.Prepared, ev.Created = prepared(m.state.ClaimAllocations(ev.ClaimUID)), true
	if ev.Pod.ID != (podapi.PodID{}) {
		if err := ops.PushFollowUp(&podapi.AddPod{Pod: ev.Pod}); err != nil {
			m.log.WarnS("the vswitch side of the pod is wired at the next resync", "pod", ev.Pod, "err", err)
		}
	}
	return fmt.Sprintf("prepared claim %s/%s: %d allocations for %s", ev.Namespace, ev.Name, len(made), ev.Pod), nil
}

func (m *Manager) newClaimAllocation(ev *dmapi.PrepareClaim, request dmapi.ClaimRequest) (allocation.Allocation, error) {
	if err := m.state.CheckClaimRequest(request.DeviceIDs); err != nil {
		return allocation.Allocation{}, err
	}
	a, err := m.prepareAllocation(request.DeviceIDs)
	if err != nil {
		return allocation.Allocation{}, err
	}
	a.ClaimUID, a.ClaimNamespace, a.ClaimName, a.Request = ev.ClaimUID, ev.Namespace, ev.Name, request.Name
	a.Pod, a.PodUID = ev.Pod.ID, ev.Pod.UID
	return a, m.record(a)
}

func prepared(held []allocation.Allocation) []dmapi.PreparedRequest {
	list := make([]dmapi.PreparedRequest, len(held))
	for i, a := range held {
		list[i] = dmapi.PreparedRequest{Request: a.Request, Memif: a.Info()}
	}
	return list
}

// removeAllocations undoes allocations this event made: state, directory,
// checkpoint.
func (m *Manager) removeAllocations(made []allocation.Allocation) error {
	if len(made) == 0 {
		return nil
	}
	var errs []error
	for _, a := range made {
		if _, err := m.state.Remove(a.ID); err != nil {
			errs = append(errs, err)
		}
		errs = append(errs, m.removeDir(a))
	}
	return errors.Join(append(errs, m.persist())...)
}

// revertPrepareClaim removes what a reverted PrepareClaim made; a claim it
// found already prepared keeps its allocations.
func (m *Manager) revertPrepareClaim(ev *dmapi.PrepareClaim) error {
	if !ev.Created {
		return nil
	}
	ev.Prepared, ev.Created = nil, false
	return m.removeAllocations(m.state.ClaimAllocations(ev.ClaimUID))
}

// unprepareClaim releases the claim's allocations once the vswitch side is
// removed: for a claim bound to a pod, a DeletePod follow-up (kubelet
// unprepares a claim only when no container of the pod runs any more);
// otherwise a ReleaseAllocation follow-up for each. A claim holding none is
// not an error.
func (m *Manager) unprepareClaim(ev *dmapi.UnprepareClaim, ops controllerapi.EventOperations) (string, error) {
	held := m.state.ClaimAllocations(ev.ClaimUID)
	if len(held) == 0 {
		return "", nil
	}
	claim := fmt.Sprintf("claim %s/%s", ev.Namespace, ev.Name)
	return fmt.Sprintf("releasing %d allocations of %s once the vswitch side is removed", len(held), claim),
		releaseClaimLater(held, claim+" unprepared", ops)
}

// releaseClaimLater releases a claim's allocations in follow-ups: for an
// allocation bound to a pod a DeletePod (once per pod), so the vswitch side
// goes first; otherwise a ReleaseAllocation.
func releaseClaimLater(held []allocation.Allocation, reason string, ops controllerapi.EventOperations) error {
	var errs []error
	deleted := map[podapi.Pod]bool{}
	for _, a := range held {
		var followUp controllerapi.Event = &ReleaseAllocation{AllocationID: a.ID, Reason: reason}
		if a.Bound() {
			pod := podapi.Pod{ID: a.Pod, UID: a.PodUID}
			if deleted[pod] {
				continue
			}
			deleted[pod] = true
			followUp = &podapi.DeletePod{Pod: pod}
		}
		if err := ops.PushFollowUp(followUp); err != nil {
			errs = append(errs, fmt.Errorf("release %s (%s): %w", a.ID, reason, err))
		}
	}
	return errors.Join(errs...)
}

// syncClaims checks the claims prepared before ev.ListedAt against the API
// server's list: a claim it no longer has (deleted, or recreated under a
// new UID) or reserved for no pod is released as unprepareClaim releases
// it (kubelet may never unprepare it: its pod went while the agent was
// down); an unbound claim reserved for one pod is bound to it, and a
// follow-up AddPod wires its vswitch side.
func (m *Manager) syncClaims(ev *dmapi.SyncClaims, ops controllerapi.EventOperations) (string, error) {
	held := map[string][]allocation.Allocation{}
	for _, a := range m.state.List() {
		if a.ClaimUID != "" && a.AllocatedAt.Before(ev.ListedAt) {
			held[a.ClaimUID] = append(held[a.ClaimUID], a)
		}
	}
	var errs []error
	var bound []podapi.Pod
	for _, uid := range slices.Sorted(maps.Keys(held)) {
		status, listed := ev.Claims[uid]
		switch {
		case status.Unread:
			continue
		case !listed:
			errs = append(errs, releaseClaimLater(held[uid], "claim "+uid+" is gone from the API server", ops))
			ev.Released = append(ev.Released, uid)
		case !status.Reserved:
			errs = append(errs, releaseClaimLater(held[uid], "claim "+uid+" is reserved for no pod", ops))
			ev.Released = append(ev.Released, uid)
		default:
			for _, a := range m.state.BindClaim(uid, status.Pod) {
				m.log.InfoS("allocation bound to its pod by its claim's reservation", allocationPairs(a, "claim", uid)...)
				if !slices.Contains(bound, status.Pod) {
					bound = append(bound, status.Pod)
				}
			}
		}
	}
	if len(bound) > 0 {
		errs = append(errs, m.persist())
	}
	for _, pod := range bound {
		if err := ops.PushFollowUp(&podapi.AddPod{Pod: pod}); err != nil {
			m.log.WarnS("the vswitch side of the pod is wired at the next resync", "pod", pod, "err", err)
		}
	}
	if len(ev.Released) == 0 && len(bound) == 0 {
		return "", errors.Join(errs...)
	}
	return fmt.Sprintf("claims synced with the API server: releasing %v, bound pods %v", ev.Released, bound), errors.Join(errs...)
}

// PreparedClaims implements dmapi.PreparedClaimsSource. Before the startup
// resync has restored the checkpoint the node seems to hold no claim, and
// a claims' sync judging that would release every claim it holds.
func (m *Manager) PreparedClaims(ctx context.Context) ([]dmapi.ClaimRef, error) {
	select {
	case <-m.restored:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the startup resync to restore the checkpoint: %w", context.Cause(ctx))
	}
	byUID := map[string]dmapi.ClaimRef{}
	for _, a := range m.state.List() {
		if a.ClaimUID != "" {
			byUID[a.ClaimUID] = dmapi.ClaimRef{UID: a.ClaimUID, Namespace: a.ClaimNamespace, Name: a.ClaimName}
		}
	}
	return slices.SortedFunc(maps.Values(byUID), func(a, b dmapi.ClaimRef) int { return strings.Compare(a.UID, b.UID) }), nil
}
