// Package kubeletdriver is the DRA driver's edge to kubelet and the API
// server: it serves kubelet's DRA gRPC API (NodePrepareResources,
// NodeUnprepareResources) and registers with kubelet through the
// kubeletplugin helper of k8s.io/dynamic-resource-allocation, publishes the
// node's memif devices with its resourceslice controller, and writes the
// CDI spec of each prepared claim.
//
// The driver is an adapter over dmapi.ClaimPreparer, which the device
// manager implements: it knows neither the event loop nor the events a
// claim becomes (it imports no controller package; imports_test.go).
// Preparing a claim refuses one shared by pods and decodes the claim's
// MemifConfig for each request (a bad one is the prepare's error, which
// kubelet shows in the pod's events), then asks ClaimPreparer.Prepare:
// the device manager makes the allocations (directory, secret,
// checkpoint) exactly as for kubelet's Allocate, and the memif wiring
// checks the configs against the node's networks, fills in what each memif
// got, and refuses the claim, leaving nothing allocated, when one does not
// fit. The driver then writes the claim's CDI spec, mode 0600, in a CDI
// directory it creates root-only, the way the runtime's CDI watch sees it
// (cdidir.go), and reads it back before kubelet gets the device IDs.
// Unpreparing asks ClaimPreparer.Unprepare (the vswitch side goes first,
// then the directories) and removes the spec. Both are idempotent: kubelet
// retries them, and calls them again after its restart.
// What a claim becomes is decided in the claims package; this package only
// moves it between kubelet, the API server, the device manager and files.
//
// kubeletplugin reads each claim from the API server before it calls the
// driver; it reads through claimprefetch's client, which the driver starts
// with it and stops after it: the claims of the node's pods are read as
// the pods are bound, so the read at NodePrepareResources is answered
// from that copy, once, while it can be current. Each claim of this
// driver so read is prepared at once, ahead of kubelet (ahead.go), and
// kubelet's NodePrepareResources takes that answer; a claim prepared
// ahead whose pod ends before kubelet asked for it is released by the
// driver.
//
// At start, before serving kubelet, it reads the node's prepared claims
// from the API server by name and hands their status to
// ClaimPreparer.Sync: a claim prepared before the agent stopped that was
// deleted, or is reserved for no pod any more, is released and its CDI
// spec removed; a claim whose binding the checkpoint lacks is bound to
// the pod its status reserves it for.
//
// Slices outlive a stop on purpose: the agent cannot tell a restart from a
// removal, and a restart that deleted and recreated them would let the
// scheduler see the node without memifs meanwhile. Stop removes the
// driver's sockets, so kubelet unregisters the driver; kubelet (v1.33 and
// later) deletes the driver's ResourceSlices of its node 30 seconds after
// it lost the driver's last registration or connection, unless the driver
// registers again first, and at its own start (the driver, when running,
// publishes them again). kubelet cleans up only after a driver it
// registered, so a driver that stops before kubelet registered it (the
// agent gone within a second of its start, or kubelet down) deletes its
// slices itself.
//
// It writes no claim status (plugins/dradriver/claimstatus does, off
// kubelet's calls) and no events: secrets leave the agent only through
// the CDI spec files and the node-local API. (The agent's pod events,
// plugins/podevents, borrow the driver's client; they carry no secret.)
package kubeletdriver
