// Package claims is the DRA driver's logic without its framework: which
// requests of a ResourceClaim are this node's memifs and which MemifConfig
// (the claim's opaque config for the driver, decoded strictly) applies to
// each, which pod the claim is bound to, that it is not shared by pods,
// what the CDI spec of a prepared claim holds (MEMIF_SOCKET, MEMIF_SECRET,
// what the memifs got from the node's networks as MEMIF_NETWORK,
// MEMIF_MODE, MEMIF_IP, MEMIF_GATEWAY, MEMIF_QUEUES, MEMIF_RING_SIZE,
// MEMIF_BUFFER_SIZE, MEMIF_MTU and MEMIF_MAC, the socket directory mounted
// at the container directory) and which devices the node's ResourceSlice
// lists.
//
// A claim reserved for more than one pod is refused (Unshared): a memif
// has one pod at each end of its socket, so the pods would share one
// directory, secret and memif ID, and all but one would stay unconnected.
// Wiring one memif ID per consumer is not done because kubelet prepares a
// claim once per node, before its later consumers are known, and hands
// them all the same CDI devices.
//
// It owns no state and does no I/O: the kubeletdriver package writes the
// spec files and publishes the slices; the device manager makes the
// allocations. Secrets appear only in the CDI spec, never in a device's
// attributes.
package claims
