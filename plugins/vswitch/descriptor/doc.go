// Package descriptor holds the vpp-agent KV scheduler descriptors that make
// VPP hold what the agent's models say, over VPP's binary API (package
// vppapi):
//
//   - MemifInterfaces: vpp-agent interface models of type MEMIF (the ones
//     package memifwiring renders) become VPP memif interfaces: a memif
//     socket filename per host socket (shared by every memif on it, removed
//     with the last one), memif_create_v2 with role, mode, ID and secret,
//     the model's name as the interface tag, IP addresses, MTU and admin
//     state.
//   - BridgeDomains and BridgeDomainInterfaces: a vpp-agent bridge domain
//     model becomes a VPP bridge domain tagged with its name; each of its
//     interfaces is a derived value bound with sw_interface_set_l2_bridge
//     once the interface exists.
//   - XConnects: a vpp-agent L2 cross-connect model (one direction: frames
//     received on one interface leave by the other) becomes
//     sw_interface_set_l2_xconnect once both interfaces exist; it is
//     pending while either is missing and removed before either is
//     deleted.
//
// Retrieve reads VPP back (memif, socket filename, interface, bridge
// domain and L2 cross-connect dumps) and reports only what carries a tag, so that a resync after
// an agent restart finds everything it made equal to the models and
// changes nothing, and leaves alone what others made. VPP never reports a
// memif's secret: Retrieve takes it from the model of the same name when
// socket and ID match, because a host socket belongs to one allocation and
// so to one secret (a new allocation has a new directory). VPP applies a
// memif's rx mode per queue, and a master's queues exist only while a pod
// side is connected (each new connection resets them to VPP's default), so
// the descriptor does not send the model's rx modes and reports them back
// as they are: SetRxModes applies them once a link comes up.
//
// Every call fails at once with vppapi.ErrNotConnected while VPP is away;
// the agent's resync on reconnection makes VPP whole again.
//
// The package owns nothing but the VPP calls; it keeps no state of its own.
package descriptor
