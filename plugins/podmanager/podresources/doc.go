// Package podresources is a client of kubelet's pod-resources API
// (k8s.io/kubelet/pkg/apis/podresources/v1): which pods kubelet has admitted
// on the node, their containers, and the device IDs kubelet assigned to each
// container. It works on any container runtime and knows a pod as soon as
// kubelet admits it, before its containers exist.
//
// Get is used where kubelet offers it; a kubelet that answers Unimplemented
// (before 1.27) or "Get method disabled" (1.27 to 1.33, where the
// KubeletPodResourcesGet gate is off by default) is asked with List from
// then on. The gRPC connection to the socket is lazy
// and reconnects by itself when kubelet restarts; every call has a timeout,
// so a hung kubelet cannot stall the caller. A call kubelet's rate limiter
// refuses (ResourceExhausted) is retried with backoff within that timeout.
//
// Device IDs are a set: kubelet lists a container's devices in no fixed
// order, so each resource's IDs are returned sorted, and two listings of an
// unchanged pod are equal.
//
// The package owns its connection only. The pod-resources API carries no pod
// UID, so pods it returns have an empty UID.
package podresources
