// Package cripods reads kubelet pods out of a CRI runtime (containerd 1.6
// and 2.x, CRI-O) through the runtime service of k8s.io/cri-api v1 on the
// runtime's socket, the way kubelet itself sees them. It is the pod
// manager's podapi.Runtime on nodes without Docker.
//
// A pod is a sandbox (ListPodSandbox: namespace, name and UID in its
// metadata) and its containers (ListContainers: the container's name, the
// annotations kubelet passed, among them the device plugin's). Mount
// sources are not in a listing: each container's are asked once with
// ContainerStatus and kept until the container is gone, since a
// container's mounts never change. A pod is listed while the runtime runs
// something of it: a ready sandbox or a container not exited. A stopped
// sandbox with exited containers is what kubelet leaves of a deleted or
// completed pod until its garbage collection, up to a minute later: such a
// pod is not listed, and kubelet's pod-resources says whether it lives.
//
// Watch follows GetContainerEvents where the runtime streams them
// (containerd 1.7 and later, CRI-O) and lists every pod after each
// (re)connection; a runtime that answers Unimplemented (containerd 1.6) is
// listed again every relist period instead. Either way a change is seen
// within about a relist period or an event.
//
// The package owns its gRPC connection only. It knows nothing of the
// controller, kubelet's pod-resources API or allocations.
package cripods
