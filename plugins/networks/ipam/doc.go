// Package ipam owns the node-local address pools of the l3 networks: one
// Pool per network hands out one address per memif from the node's share
// of the network's subnet, and IPAM holds the pools of every network.
//
// Addresses. The share is a prefix within the subnet: the whole subnet on
// a single node; a multi-node split gives each node a part. The subnet's
// own network address (and for IPv4 its broadcast address) is never handed
// out. The first remaining address of the share is the gateway, which the
// node's VPP holds; the pods get the rest. Allocate hands out the next free
// address after the last one handed out, wrapping around, so a released
// address is not reused at once (a neighbour's cache may still hold it).
// Claim honours a requested address. No address is held twice: each has
// at most one owner, and an owner (one memif: the caller's key, for
// example "<allocation ID>/<memif ID>") holds at most one address of a
// pool. Allocate and Claim of what an owner already holds return it, so a
// resync that wires a memif again keeps its address.
//
// Errors match the sentinels ErrOutsideSubnet, ErrOutsideShare,
// ErrReserved, ErrTaken, ErrOwnerHolds and ErrExhausted with errors.Is,
// and name the address and the pool; they never name another owner.
//
// State. Snapshot returns the leases as a JSON-able State for the
// networks' state file (networks.json, package assign); Restore rebuilds the pools from one, refusing a
// State that holds an address twice, gives an owner two addresses of a
// pool, or leases an address the pool cannot hand out.
//
// Neither type is safe for concurrent use: package assign, in the memif
// wiring, touches them from the controller's event loop only. The package
// knows nothing of networks.conf, pods or VPP; it lives under
// plugins/networks as the networks plugin's plain core, importable by the
// memif wiring as an api package is.
package ipam
