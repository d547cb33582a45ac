package devicemanager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/contivpp/memif-agent/internal/handover"
	"github.com/contivpp/memif-agent/internal/nodelock"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
)

// HandoverTimeout bounds what the agent holding the node does when a
// successor asks for it: wait for the admissions and events it took (each
// commit bounded by the controller's commit-timeout) and stop listening.
const HandoverTimeout = 35 * time.Second

// servingPoll is how often a starting agent checks whether it serves
// kubelet yet, to tell the agent it replaces.
const servingPoll = 200 * time.Millisecond

// PluginSocketFor is the device plugin socket's file name for the agent
// of the pod podUID, when the agent runs for rolling updates
// (dmapi.PodUIDEnv): two agents of one node serve kubelet at once during
// an update, each on its own socket.
func PluginSocketFor(podUID string) string { return "memif-" + podUID + ".sock" }

// handoverPath is the handover socket beside the node lock.
func handoverPath(lockPath string) string { return lockPath + ".handover" }

// takeNode takes the node lock at lockPath. Without a pod UID it waits up
// to NodeLockWait for the holder to exit. With one, it asks the holder to
// hand the node over (internal/handover) and takes the lock as soon as
// the holder released it; a holder that does not hand over (an agent
// without handover, or one exiting) is waited for, all within
// NodeLockWait.
func (p *Plugin) takeNode(lockPath string) (*nodelock.Lock, error) {
	waiting := func(holder string) {
		p.log.InfoS("waiting for the memif-agent holding the node lock to exit", "upTo", NodeLockWait, "lock", lockPath, "holder", holder)
	}
	if p.podUID == "" {
		return nodelock.Acquire(lockPath, NodeLockWait, waiting)
	}
	lock, err := nodelock.Acquire(lockPath, 0, nil)
	var held *nodelock.HeldError
	if !errors.As(err, &held) {
		return lock, err
	}
	deadline := time.Now().Add(NodeLockWait)
	p.log.InfoS("the memif-agent holding the node lock is asked to hand the node over to this one", "lock", lockPath, "holder", held.Holder, "podUID", p.podUID)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	granted, err := handover.Request(ctx, handoverPath(lockPath), p.podUID)
	if err != nil {
		p.log.WarnS("no handover from the memif-agent holding the node lock, so this one waits for it to exit", "lock", lockPath, "err", err)
		return nodelock.Acquire(lockPath, time.Until(deadline), waiting)
	}
	lock, err = nodelock.Acquire(lockPath, time.Until(deadline), waiting)
	if err != nil {
		return nil, errors.Join(err, granted.Close())
	}
	p.granted = granted
	p.log.InfoS("the node was handed over to this memif-agent", "podUID", p.podUID)
	return lock, nil
}

// serveNode runs from AfterInit until Close: once the agent serves
// kubelet (the device plugin registered and a pod source answering, each
// dmapi.KubeletRegistration registered), it tells the agent it replaced,
// if any, and then serves the handover socket for the agent that will
// replace it.
func (p *Plugin) serveNode(ctx context.Context) {
	ticker := time.NewTicker(servingPoll)
	defer ticker.Stop()
	for !p.servesKubelet() {
		select {
		case <-ctx.Done():
			if p.granted != nil {
				_ = p.granted.Close()
			}
			return
		case <-ticker.C:
		}
	}
	if p.granted != nil {
		if err := p.granted.Serving(); err != nil {
			p.log.WarnS("telling the memif-agent this one replaced that it serves kubelet failed", "err", err)
		}
	}
	if p.nodeLock == nil {
		return
	}
	server, err := handover.Serve(handoverPath(p.lockPath), p, handover.Config{HandOverTimeout: HandoverTimeout}, p.log)
	if err != nil {
		p.log.WarnS("no handover for the agent that replaces this one, which will wait for this one to exit", "err", err)
		return
	}
	<-ctx.Done()
	if err := server.Close(); err != nil {
		p.log.WarnS("handover socket close failed", "err", err)
	}
}

// servesKubelet tells whether kubelet can send this agent its admissions.
func (p *Plugin) servesKubelet() bool {
	if p.dm.Ready() != nil {
		return false
	}
	for _, participant := range p.handover {
		if registration, ok := participant.(dmapi.KubeletRegistration); ok && !registration.KubeletRegistered() {
			return false
		}
	}
	return true
}

var _ handover.Holder = (*Plugin)(nil)

// HandOver implements handover.Holder: kubelet's Allocate calls go to the
// successor's device plugin, then each participant hands over in order,
// then the node lock is released.
func (p *Plugin) HandOver(ctx context.Context, successorUID string) error {
	p.dm.HandOver(filepath.Join(p.pluginDir, PluginSocketFor(successorUID)))
	for _, participant := range p.handover {
		participant.HandOver(ctx, successorUID)
	}
	if err := p.nodeLock.Release(); err != nil {
		return fmt.Errorf("release the node lock %s: %w", p.lockPath, err)
	}
	p.log.InfoS("node handed over: this agent forwards kubelet's calls to the successor until it serves them", "successorPodUID", successorUID)
	return nil
}

// SuccessorServing implements handover.Holder: this agent stops serving
// kubelet and waits for its pod to be deleted.
func (p *Plugin) SuccessorServing() {
	p.dm.Stop()
	for _, participant := range p.handover {
		participant.SuccessorServing()
	}
	p.log.InfoS("the replacing memif-agent serves kubelet: this one no longer does, and waits to be stopped")
}

// SuccessorGone implements handover.Holder: the successor exited before
// it served. This agent no longer owns the node's state, so it stops;
// kubelet restarts it, and it takes the node lock again.
func (p *Plugin) SuccessorGone() {
	p.log.ErrorS(nil, "the memif-agent this one handed the node to exited before it served kubelet: stopping, so that kubelet restarts this agent and it takes the node back")
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		p.log.ErrorS(err, "stopping this agent failed")
	}
}

// ReleaseNodeLock drops the node lock, after Close. The agent's process
// exiting drops it for the agent; an agent run in a test's process
// (internal/inprocess) drops it so that the next one on its paths starts.
// A lock already handed over is no error.
func (p *Plugin) ReleaseNodeLock() error {
	if p.nodeLock == nil {
		return nil
	}
	if err := p.nodeLock.Release(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("release the node lock %s: %w", p.lockPath, err)
	}
	return nil
}
