// Package vswitch is the cn-infra plugin that makes VPP hold the vswitch
// side the other plugins put into the KV scheduler: it registers the VPP
// descriptors of package descriptor (memif and loopback interfaces, the
// AF_PACKET and VXLAN tunnel interfaces of networks that span nodes, VRF
// tables, routes, bridge domains, L2 cross-connects) and keeps the agent's
// connection to VPP's binary API (package vppapi).
//
// vswitch.conf names VPP's API socket (vpp-api-socket). Left empty, the
// plugin registers nothing and the models stay unimplemented in the KV
// scheduler, for nodes whose vswitch is programmed by something else.
//
// VPP may be down, hang or restart at any time; the agent stays up. VPP is
// asked for a control_ping every health-check-period; one left unanswered
// for request-timeout (a hung or stopped VPP) drops the connection, so that
// no call waits on VPP and none queues in its socket to run when it wakes.
// While VPP is unreachable the plugin reports itself in error (the agent's
// readiness probe fails, its liveness does not) and every vswitch change
// fails at once; the controller commits off its loop, so this never holds
// back an admission. Whether VPP answers, and since when it does not, is
// the plugin's Go API (package api, VswitchAPI.Reachability): the device
// manager reports its devices unhealthy once VPP has been unreachable for
// longer than vswitch-health-grace. Each time VPP answers again, the plugin pushes
// a full resync into the controller event loop: the KV scheduler reads VPP
// back (Retrieve) and re-creates what is missing, so a restarted VPP gets
// every interface back, while a resync that finds VPP as it should be
// changes nothing.
//
// The link watcher follows the memifs' links through VPP's interface
// events (want_interface_events, subscribed at each connection), logs
// each change, and tells the KV scheduler each link's state, on which a
// memif's rx modes wait (descriptor.LinkStates, descriptor.RxModes): the
// scheduler writes them when a pod side connects. Each link-check-period
// it reads the memifs' counters and, while links are down, why (VPP
// refuses a wrong secret without an event), for MemifLinks and the
// pods' Events.
//
// Register it with the KV scheduler and the event loop. Init registers the
// descriptors and waits for the first dial to VPP, so before the
// controller's startup resync: a VPP that is up is programmed by that
// resync, not refused with "not connected to VPP":
//
//	vswitchPlugin := vswitch.NewPlugin(vswitch.UseDeps(func(deps *vswitch.Deps) {
//		deps.KVScheduler = scheduler
//		deps.StatusCheck = health
//	}))
//	vswitchPlugin.EventLoop = controller
package vswitch
