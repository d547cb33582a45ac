package api

import "context"

// PodUIDEnv names the environment variable that holds the agent's own pod
// UID (the DaemonSet sets it from metadata.uid). With it, the agent runs
// for rolling updates with maxSurge: its kubelet sockets are named after
// its pod, and it hands the node over to the agent that replaces it
// (internal/handover) instead of making it wait for the node lock.
const PodUIDEnv = "POD_UID"

// HandoverParticipant is a part of the agent that serves kubelet or
// listens on an address the node's agents share, and so takes part when
// the device manager hands the node over to the agent replacing this one.
type HandoverParticipant interface {
	// HandOver is called, in the order the participants are given, once
	// the device plugin forwards Allocate to the successor (the pod UID
	// given) and before the node lock is released: a participant
	// forwards kubelet's calls to the successor, finishes what it took,
	// or stops listening on a shared address. It must not fail; ctx
	// bounds the handover.
	HandOver(ctx context.Context, successorUID string)
	// SuccessorServing is called once the successor serves kubelet: a
	// participant still serving kubelet stops now.
	SuccessorServing()
}

// KubeletRegistration is a participant that kubelet registers apart from
// the device plugin (the DRA driver): a successor says it serves only
// once each such participant is registered.
type KubeletRegistration interface {
	// KubeletRegistered reports whether kubelet registered it, or true
	// when it does not serve kubelet at all (switched off).
	KubeletRegistered() bool
}
