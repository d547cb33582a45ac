// Package wiring renders the vswitch side of every pod's memifs as
// vpp-agent interface models, and is the controller event handler that puts
// them into event transactions.
//
// For each memif allocation bound to a pod, the socket carries one memif per
// device; each becomes one vpp_interfaces.Interface of type MEMIF, enabled,
// in the master role, listening on the allocation's host socket with its
// secret and the memif ID of the device (0..n-1, unique on that socket).
// A memif in one of networks.conf's networks (networks.go) takes its
// queues, ring and buffer sizes, rx mode and MTU from what it was
// assigned (package plugins/networks/assign); in an l3 network it is in
// IP mode, in the network's VRF, unnumbered to the loopback
// "gw_<network>" that holds the gateway, with a host route to the pod's
// address; in an l2 network it is in ethernet mode, in the network's
// bridge domain (RenderNetworks renders the VRF tables, gateways and
// bridge domains). A memif in no network gets its addresses, VRF, MTU
// and rx mode from Config.
//
// Interface names are derived from the pod: "memif_<namespace>_<pod>_
// <container>_<memif ID>". The separator "_" cannot occur in Kubernetes
// names, so distinct pods never share a name. The VPP descriptors keep the
// name in the VPP interface tag after the agent's prefix (package
// plugins/vswitch/owner), which leaves it at most 51 characters; a longer
// name is cut to 42 characters and ends with "_" and 8 hex digits of its
// SHA-256, so it stays unique.
//
// Config.BridgeDomain adds a vpp_l2.BridgeDomain holding every wired
// interface; Config.L2XConnect adds, for each configured pair of memifs, a
// vpp_l2.XConnectPair per direction, named by the interface names the two
// memifs get whether their pods are on the node or not: the KV scheduler
// holds a pair pending until both interfaces exist. With the networks
// plugin, Config.BridgeDomain is the default l2 network instead; the first
// resync after the agent's start moves the memifs of pods that name no
// network between it and no network as Config now says
// (assign.FollowWiring), so an agent restarted with memifwiring.conf
// switched between bridge-domain and l2-xconnect leaves no running pod's
// memif in neither.
//
// Networks that span nodes (Options.Span, SpanChanged from
// plugins/crossnode; off, nothing below is rendered): RenderSpan adds
// VPP's AF_PACKET interface into the underlay with the node's underlay
// address, and for each network that has memifs on the node a VXLAN
// tunnel (the network's VNI, netconf.Network.VNI) to each peer, in the
// network's bridge domain in split-horizon group 1 (each node floods to
// every peer itself). An l2 network's bridge domain is its memifs'; an l3
// network's gateway loopback becomes the BVI of a bridge domain of its
// own, with a MAC address derived from the node's underlay address (VPP
// gives every node's first loopback the same one), holding the node's
// gateway with the whole subnet's length, so the peers' gateways are on
// link; the VRF routes each peer's share through that peer's gateway. The
// address pools hand out the node's share (assign.SetShares); a memif of
// an l3 network waits, refused, until the share is claimed, and
// SpanChanged wires every bound pod again, under the span Options.Span
// holds when it is handled (never older than the event's).
//
// A memif refused is tried again, through the event that may clear its
// refusal, so that no restart or new pod is needed: a NetworksChanged
// wires again every pod with a memif refused (a network declared that
// its spec named, a subnet grown), and an event that releases addresses
// (DeletePod, an AllocateDevice that takes memifs over) the pods with a
// memif refused for subnet-exhausted or address-taken, in the order of
// their names, so that the first gets the address freed. Their
// memif.json and the device manager's record follow, and they are told
// (MemifWired).
//
// With Options.Events, an update tells each pod of its memifs newly wired
// or refused (Kubernetes Events MemifWired and MemifRefused, through
// plugins/podevents, which only queues on the loop); a resync tells
// nothing, so that an agent restart repeats no pod's events.
//
// The handler owns its record of which interface keys it put for which pod.
// It is touched only from the controller event loop. It reads the device
// manager and never changes allocations: when the vswitch side fails, the
// allocation stays and the healing resync wires it again.
package wiring
