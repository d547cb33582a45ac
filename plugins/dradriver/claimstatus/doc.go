// Package claimstatus writes what Kubernetes sees of each memif of the
// DRA driver's prepared claims: ResourceClaim.status.devices[] (KEP-4817),
// one entry per device, with networkData (the memif's addresses in CIDR
// and its MAC, as memif.json gives them), the conditions Ready (the memif
// wiring resolved the memif as its spec asks; False with the refusal's
// reason) and LinkUp (VPP shows the pod side connected; False with
// PodSideNotConnected, WrongSecret or VswitchUnreachable, a link that was
// up only once vswitch.conf's link-down-grace has passed), and data
// holding the memif's memif.json entry (which has no field for the
// secret).
//
// Build is pure: the status of each claim from the node's state in
// memory (the device manager's allocations with the wiring's networks,
// the vswitch plugin's last reading of VPP's links, VPP's reachability).
// Writer reads that state every SyncPeriod and at each change of VPP's
// reachability, on a goroutine of its owner's (the dradriver plugin), off
// kubelet's NodePrepareResources and off the event loop: it changes no
// agent state. It writes a claim only once its memifs are resolved and
// only when its status changed, by server-side apply of the status
// subresource with the field manager <driver>/<node> (other drivers'
// entries stay), with the claim's UID (a claim recreated under the name
// is not written); a claim the node no longer holds (unprepared) gets an
// apply without devices, which removes the writer's entries. An API
// server that drops status.devices (feature gate
// DRAResourceClaimDeviceStatus off), or refuses the writes (RBAC, the
// chart's ValidatingAdmissionPolicy), costs one log line, and the writer
// writes no more until the agent restarts.
package claimstatus
