// Package claims is the DRA driver's logic without its framework: which
// requests of a ResourceClaim are this node's memifs, which pod the claim
// is bound to, what the CDI spec of a prepared claim holds (MEMIF_SOCKET,
// MEMIF_SECRET, the socket directory mounted at the container directory)
// and which devices the node's ResourceSlice lists.
//
// It owns no state and does no I/O: the kubeletdriver package writes the
// spec files and publishes the slices; the device manager makes the
// allocations. Secrets appear only in the CDI spec, never in a device's
// attributes.
package claims
