package api

import "context"

// PodLister lists the pods that are alive on the node, from the container
// runtime and kubelet's pod-resources API together. Resyncs use it to keep
// what is alive and collect what is not.
type PodLister interface {
	// ListPods returns every live pod. An error means the answer is not
	// known (runtime or kubelet unreachable): callers must then collect
	// nothing.
	ListPods(ctx context.Context) ([]PodState, error)
}
