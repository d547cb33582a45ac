package api

// LivePodsSource is the pod tracker as the device manager sees it: the one
// that decides which pods are alive, and pushes that decision as LivePods
// events (and DeletePod for each pod it finds gone).
type LivePodsSource interface {
	// RequestLivePods asks for a LivePods event soon, without waiting: a
	// handler calls it at a resync, on the event loop. The event is not
	// pushed while no pod source answers.
	RequestLivePods()
	// PodSourcesAnswer tells whether a pod source answered the tracker's
	// last comparison: nil when one did, else why none did (or that none
	// was asked yet). Safe from any goroutine.
	PodSourcesAnswer() error
}
