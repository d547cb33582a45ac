// Package memifwiring is the cn-infra plugin that wires the vswitch side of
// every pod's memifs: it is a controller event handler that, on AddPod, on
// PrepareClaim, on NetworksChanged and SpanChanged and at every resync,
// puts one vpp-agent MEMIF interface (master, on the allocation's host
// socket, with its secret) per memif into the event's transaction, with
// what the memif got from its network (the pod's memif.contivpp.io/networks
// annotation or the claim's MemifConfig, over networks.conf: VRF tables,
// gateway loopbacks, routes, bridge domains) and, with a span
// (plugins/crossnode), the tunnels to the other nodes; and deletes them on
// DeletePod and when an AllocateDevice takes their devices over (kubelet
// handed them to a new container). The controller commits them to the
// vpp-agent KV scheduler, whose VPP descriptors (plugins/vswitch) make VPP
// hold them. For memifs in no network, bridge-domain in memifwiring.conf
// puts one bridge domain holding them, so that pods reach each other
// through VPP; l2-xconnect instead an L2 cross-connect per configured pair
// of memifs and direction, at every resync: they name the interfaces the
// pods' memifs get, so the KV scheduler holds each pending until both
// memifs exist and removes it before either is deleted.
//
// The plugin is a thin adapter: configuration (memifwiring.conf), the
// networks' state files beside the device manager's checkpoint
// (networks.json and networks-origins.json, package
// plugins/networks/assign), the metrics (the memif link collector over
// the vswitch's links, the address-use gauges) and lifecycle over package
// wiring, which does the work. It reads the device manager and never
// changes allocations; what each memif got it hands the device manager
// (dmapi.NetworkRecorder), which writes the pods' memif.json.
//
// Register it in the controller's handler list after the device manager, so
// that AddPod binds the allocations before they are wired and DeletePod
// (which visits handlers in reverse) removes the interfaces before the
// allocation is released:
//
//	wiring := memifwiring.NewPlugin(memifwiring.UseDeps(func(deps *memifwiring.Deps) {
//		deps.DeviceManager = deviceManager
//	}))
//	controller := controller.NewPlugin(controller.UseDeps(func(deps *controller.Deps) {
//		deps.EventHandlers = []api.EventHandler{deviceManager, wiring}
//	}))
package memifwiring
