// Package kubeletdriver is the DRA driver's edge to kubelet and the API
// server: it serves kubelet's DRA gRPC API (NodePrepareResources,
// NodeUnprepareResources) and registers with kubelet through the
// kubeletplugin helper of k8s.io/dynamic-resource-allocation, publishes the
// node's memif devices with its resourceslice controller, and writes the
// CDI spec of each prepared claim.
//
// Preparing a claim pushes a blocking PrepareClaim event into the
// controller event loop, where the device manager makes the allocations
// (directory, secret, checkpoint) exactly as for kubelet's Allocate; the
// driver then writes the claim's CDI spec, mode 0600, in a CDI directory it
// creates root-only. Unpreparing pushes UnprepareClaim (the vswitch side
// goes first, then the directories) and removes the spec. Both are
// idempotent: kubelet retries them, and calls them again after its restart.
// What a claim becomes is decided in the claims package; this package only
// moves it between kubelet, the API server, the event loop and files.
//
// It never writes claim status or events: secrets leave the agent only
// through the CDI spec files and the node-local API.
package kubeletdriver
