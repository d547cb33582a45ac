package api

import "context"

// Runtime is a container runtime's view of kubelet's pods: Docker (for
// cri-dockerd nodes) or any CRI runtime (containerd, CRI-O). A pod exists
// there while its sandbox or one of its containers does, running or not.
type Runtime interface {
	// String names the runtime and its endpoint, for logs.
	String() string
	// ListPods returns every pod, ordered by ID; when containers of several
	// incarnations of a pod are left, the pod is the newest incarnation.
	ListPods(ctx context.Context) ([]PodState, error)
	// GetPod returns the pod with the given ID and whether it exists.
	GetPod(ctx context.Context, id PodID) (PodState, bool, error)
	// Watch follows the runtime's changes until ctx ends and tells
	// listener, one call at a time, in order. The caller owns the
	// goroutine it runs in.
	Watch(ctx context.Context, listener RuntimeListener)
}

// RuntimeListener hears what a Runtime's Watch sees.
type RuntimeListener interface {
	// PodsListed gives every pod in the runtime, after each (re)connection
	// and, for a runtime that streams no events, at every relisting.
	PodsListed(ctx context.Context, pods []PodState)
	// PodChanged gives a pod's state after one of its containers changed:
	// pod is the incarnation the change was about, state the pod's current
	// incarnation; exists is false once no container of any incarnation is
	// left.
	PodChanged(ctx context.Context, pod Pod, state PodState, exists bool)
}
