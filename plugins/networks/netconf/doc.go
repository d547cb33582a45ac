// Package netconf owns networks.conf, the node's declared networks, and the
// rules for changing them while pods use them.
//
// The file:
//
//	networks:
//	  - {name: red, type: l3, subnet: 10.70.0.0/24}   # a VRF of its own
//	  - {name: lab, type: l2}                          # a bridge domain
//	  - {name: v6,  type: l3, subnet: fd00:70::/64, mtu: 9000, rx-mode: interrupt}
//	default-network: lab                               # for pods that name none
//
// Decode reads it strictly (internal/configfile: an unknown key is an error
// naming it) and Validate reports every problem at once, each a
// *configfile.KeyError.
//
// IDs. Each l3 network has a VRF table and each l2 network a bridge domain
// whose ID must not change while the network lives, across reloads and
// agent restarts. The ID is derived from the name (FNV-1a, folded into
// 1..MaxID, the range of VPP's bridge domain IDs), so it needs no state: the
// same name has the same ID on every node and after a lost checkpoint. Two
// names of one type that fold to the same ID are refused, naming both; the
// optional id key of a network sets its ID instead, which also suits a
// table that exists on the node already.
//
// Old configs. memifwiring.conf's bridge-domain becomes the default l2
// network (WithLegacy); its ip-addresses, l2-xconnect and vrf keep applying
// to memifs that are in no network, and are refused, with what to write
// instead, when a default network would put every memif in one.
//
// Shares. node-prefix-length is the length of each node's share of an l3
// subnet once a network spans nodes (NodePrefix: 0 is /26, IPv6 /122, or
// the whole subnet if it is smaller); package shares claims the shares.
//
// Changes. Reconcile is the rule for a new file while pods use the
// networks: a change that would pull a network from under live pods
// (removed, type, subnet, id or node-prefix-length changed) is refused for
// that network, which stays as it was, and applies once the pods are gone;
// every other change applies at once.
//
// It lives under plugins/networks, the plugin that owns networks.conf
// (-networks-config), as that plugin's plain core. It holds no state and
// imports no framework, so the memif wiring, the crossnode tracker and the
// networks' other plain packages (assign, memifspec) may import it as they
// import an api package. It knows nothing of VPP models, pods or IPAM.
package netconf
