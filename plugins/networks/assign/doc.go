// Package assign owns what the networks give each memif of the node: the
// networks applied (networks.conf after netconf.Reconcile), the spec each
// allocation's memifs are wired by, and their addresses (package ipam).
//
// Specs. An allocation's memifs get their specs once, when the allocation
// is first wired with its pod known (the device plugin path: the pod's
// memif.contivpp.io/networks annotation, which the runtime's sandbox
// carries and which does not change while the pod lives) or when its claim
// is prepared (the DRA path: the claim's MemifConfig). A memif that no
// spec names gets the default network of that moment, so a later change
// of networks.conf's default-network moves no live memif. A refused
// annotation is kept as the allocation's refusal: none of its memifs is
// wired.
//
// Origins. Each memif's record says where its network came from (Origin):
// named by its pod, networks.conf's default-network, or memifwiring.conf,
// whose bridge-domain is the default l2 network and which, without one,
// leaves such memifs in no network for its l2-xconnect, ip-addresses and
// vrf. memifwiring.conf is read only at the agent's start, and its keys
// are node-wide wiring rather than a network a pod asked for: at each
// start FollowWiring moves the memifs from memifwiring.conf to where it
// sends them now (between its bridge domain and no network, both
// ethernet, so nothing changes on the pod's side), before SetNetworks, so
// that a bridge domain they leave is no longer held by them. Every other
// memif keeps its network, and a network removed while one uses it waits
// (netconf.Reconcile).
//
// Resolve checks each memif's spec against the applied networks and hands
// out its address, every time the wiring renders the allocation: a
// networks.conf change (a new rx mode, a network added that a refused
// spec named) reaches live memifs at once, and a memif refused before is
// wired once its network allows it. A memif whose spec is refused holds
// no address.
//
// Pools. An l3 network hands out its whole subnet while networks end at
// the node; once they span nodes (SetShares), the node's share of it,
// claimed through the API server (package shares), and none until the
// share is claimed: its memifs are refused meanwhile, so that no pod gets
// an address of another node's share. A pool restored from the state file
// stays until the claim, which gives the same share back.
//
// Persistence. The records, the applied networks and the addresses are
// one JSON file beside the device manager's checkpoint (networks.json in
// its directory), written atomically (temporary file, fsync, rename, fsync
// of the directory) by Save on the event loop before the transaction that
// uses them is committed, so an address a pod may have been told is never
// forgotten by a crash, and after a restart every memif gets the same
// spec and address again: the resync changes nothing in VPP. The device
// manager's checkpoint stays as it is: an allocation is released there
// first, and Retain drops the records of allocations that are gone, so a
// crash between the two costs nothing but the lease until the next resync.
// Keeping it apart keeps the checkpoint's format and journal out of this
// package, and this file small enough to be written whole.
//
// The records' origins are a second file beside it (networks-origins.json),
// written the same way, and first: networks.json keeps the format agents
// of before read (strictly), so that a rollback to one keeps the node's
// records, and such an agent never reads the origins file. A memif
// whose origin the file does not hold (it is missing, of a later version,
// or older than the record) follows the rule for records of before: in no
// network, it follows memifwiring.conf; in a network, it keeps it.
//
// An Assigner is touched only from the controller's event loop.
package assign
