// Package podevents is the cn-infra plugin that posts the memif wiring's
// and the vswitch's pod events (plugins/podevents/kubeevents) to the API
// server: Warning MemifRefused when a memif's spec is refused
// (MemifNetworkRefused when its network is not the node's), Normal
// MemifWired when a memif is wired, Warning MemifWrongSecret when VPP
// refuses a pod side's secret and MemifLinkDown when a link stays down
// past vswitch.conf's link-down-grace. It is the memif wiring's
// wiring.PodEvents and the vswitch's vswitchapi.LinkEvents; it finds the
// pod of a link in the device manager's allocations.
//
// It needs an API server client and makes none of its own config: it
// takes the DRA driver's when the driver is on (dradriver.conf, its
// kubeconfig or the pod's service account), else the pod's service
// account when one is mounted; with neither it logs one line and the
// events are dropped. The node is $NODE_NAME. Events the wiring tells
// before AfterInit (none but those of pods added while the agent starts)
// are dropped too. Close stops the recorder.
//
//	podEvents := podevents.NewPlugin(podevents.UseDeps(func(deps *podevents.Deps) {
//		deps.DRADriver = draDriver
//	}))
//
// List it after the DRA driver in the agent.
package podevents
