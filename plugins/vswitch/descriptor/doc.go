// Package descriptor holds the vpp-agent KV scheduler descriptors that make
// VPP hold what the agent's models say, over VPP's binary API (package
// vppapi):
//
//   - Interfaces (key config/vpp/v2/interfaces/<name>): vpp-agent interface
//     models of type MEMIF and SOFTWARE_LOOPBACK. A memif gets a socket
//     filename per host socket (shared by every memif on it, removed with
//     the last one) and memif_create_v2 with role, mode (ethernet or IP),
//     ID, secret, rx and tx queues, ring size, buffer size and MAC address;
//     a loopback create_loopback with its MAC address. Then both get the
//     agent's tag (owner.Tag of the model's name), the VRF (the IPv4 and the IPv6
//     table of that ID), unnumbered to another interface or IP addresses,
//     MTU (a memif in IP mode has no hardware MTU: its L3 MTU), admin state
//     and rx modes. An interface in VRF N depends on both VRF tables N; an
//     unnumbered one on its target, which must be in the same VRF (VPP
//     refuses otherwise).
//   - The same descriptor makes the interfaces of networks that span
//     nodes: AF_PACKET, VPP on a Linux link such as the node's end of a
//     veth into the underlay (af_packet_create_v3, Ethernet mode, the
//     model's MAC or a random one), and VXLAN_TUNNEL, a unicast tunnel
//     (vxlan_add_del_tunnel_v3: source, destination, VNI, encapsulated in
//     table 0) that is an L2 port: it carries a network as a member of the
//     network's bridge domain, in a split-horizon group, and the bridge
//     domain's BVI routes it in the network's VRF. Both plugins are
//     optional (vppmsg.OptionalPlugins): without them only these fail.
//   - VrfTables (config/vpp/v2/vrf-table/id/<N>/protocol/<IPV4|IPV6>): a VRF
//     table, named owner.Tag of the model's label.
//   - Routes (config/vpp/v2/route/if/<iface>/vrf/<N>/dst/<ip>/<len>/): an
//     INTRA_VRF route with one path through an interface, such as a pod
//     address's /32 (/128) via its memif; it waits for the interface and
//     the VRF table.
//   - BridgeDomains and BridgeDomainInterfaces: a vpp-agent bridge domain
//     model becomes a VPP bridge domain tagged owner.Tag of its name; each
//     of its interfaces is a derived value bound with
//     sw_interface_set_l2_bridge once the interface exists, in its
//     split-horizon group, or as the bridge domain's one BVI.
//   - XConnects: a vpp-agent L2 cross-connect model (one direction: frames
//     received on one interface leave by the other) becomes
//     sw_interface_set_l2_xconnect once both interfaces exist.
//
// The interface descriptor keeps each interface's VPP index (and a
// memif's socket ID) as the scheduler's metadata; the bridge domain
// descriptor each bridge domain's ID. The other descriptors look
// interfaces up there (InterfaceIndex), so that no create, update or
// delete dumps VPP to find what it names. Metadata made over an earlier
// connection to VPP is not trusted (VPP may have restarted and reused the
// index): a delete then asks VPP by tag, the others fail until the
// resync that follows every reconnection.
//
// In place: admin state, MTU, MAC address, addresses and unnumbered (rx
// modes: RxModes). Re-created: the type, everything of the memif link, and the VRF
// (VPP moves an interface between tables only while it has no address).
//
// Retrieve reads VPP back and reports only what is the agent's (package
// owner): interfaces and bridge domains whose tag, and tables whose name,
// starts with owner.Prefix, API-sourced routes in those tables or table 0
// through one of those interfaces, and cross-connects between two of them.
// So a resync after an agent restart finds everything it made equal to
// the models and changes nothing, and never changes or deletes what
// others made: a memif, a loopback or a bridge domain made by hand (with
// another tag, or none) survives agent restarts and resyncs. What VPP does not report is taken from
// the model of the same name when socket and ID match: a memif's secret,
// and, since VPP as memif master lets the pod side choose them when it
// connects (memif_create_v2 ignores a master's queue counts, and memif_dump
// reports the negotiated ring and buffer size), its queue counts, ring size
// and buffer size. Rx modes apply per queue, and a master's queues exist
// only while a pod side is connected (each new connection resets them to
// VPP's default): they are a value of their own, RxModes
// (vpp_interfaces.RxModesKey, derived from the interface model), which
// depends on the memif's link state (LinkStates: vpp_interfaces.
// LinkStateKey values pushed from VPP's side by the vswitch's link
// watcher, and read back by the interface Retrieve). The KV scheduler
// writes the modes when a link comes up; Retrieve reports the queues'
// modes when VPP has queues, and none otherwise, so an agent restart
// writes nothing.
//
// Each descriptor's callbacks take its model's type (typed, a small
// generic adapter over kvs.KVDescriptor), so none casts a proto.Message.
//
// Every call fails at once with vppapi.ErrNotConnected while VPP is away;
// the agent's resync on reconnection makes VPP whole again.
//
// The package owns nothing but the VPP calls and the metadata maps it
// hands the scheduler.
package descriptor
