package api

import "context"

// PodResolver tells what is known of one pod right now, from the container
// runtime and kubelet's pod-resources API together. The device manager uses
// it to answer for a pod kubelet has just admitted, before any AddPod.
type PodResolver interface {
	// ResolvePod returns the pod's live state; found is false when neither
	// source knows the pod. An error means the answer is not known.
	ResolvePod(ctx context.Context, pod PodID) (state PodState, found bool, err error)
}
