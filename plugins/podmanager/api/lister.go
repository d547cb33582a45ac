package api

import "context"

// PodLister lists the pods that are alive on the node, from the container
// runtime and kubelet's pod-resources API together. The device manager
// calls it off the event loop and carries the answer in its events.
type PodLister interface {
	// ListPods returns what the sources that answered list. An error means
	// no source answered; a source failing alone is in Listing.Err.
	ListPods(ctx context.Context) (Listing, error)
}

// Listing is the live pods as the sources that answered list them.
type Listing struct {
	// Pods are the live pods, ordered by ID.
	Pods []PodState
	// Authoritative tells that a pod not in Pods holds no device: kubelet
	// answered (it lists every pod it admitted and has not yet freed the
	// devices of), or no kubelet is configured and the runtime answered.
	Authoritative bool
	// RuntimeAnswered tells that the container runtime answered; a listing
	// from kubelet alone lacks UIDs and containers not yet started.
	RuntimeAnswered bool
	// Err says which source did not answer and why; nil when all did.
	Err error
}

// Find returns the live pod with the given ID, or nil.
func (l Listing) Find(id PodID) *PodState {
	for i := range l.Pods {
		if l.Pods[i].Pod.ID == id {
			return &l.Pods[i]
		}
	}
	return nil
}
