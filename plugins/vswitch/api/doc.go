// Package api is the vswitch plugin's Go API: whether the vswitch the
// agent programs answers (VswitchAPI, Reachability), which the device
// manager consumes to report its devices unhealthy, to kubelet and the
// scheduler, while the vswitch does not answer; the memifs' links and
// counters as VPP last showed them (LinkReader, MemifLink), which the
// memif wiring serves as metrics; and what happens to a link that its
// pod should know of (LinkEvents: a wrong secret, a link down past its
// grace), which the pod events plugin implements. It owns types only and
// imports no other part of the vswitch plugin.
package api
