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
// only when its status changed, by an update of the status subresource:
// the claim as read, with the writer's entries replaced and every other
// entry kept (other drivers', other nodes'), under its resourceVersion
// and the field manager <driver>/<node>; a claim recreated under the name
// (another UID) is not written. A claim the node no longer holds
// (unprepared) loses the writer's entries, unless it is being deleted or
// deallocated, which takes them anyway. An API server that drops
// status.devices (feature gate DRAResourceClaimDeviceStatus off), or
// forbids the writes (RBAC), costs one log line, and the writer writes no
// more until the agent restarts; a status the API server refuses
// (validation, the chart's ValidatingAdmissionPolicy) is logged and
// written again once it changes.
package claimstatus
