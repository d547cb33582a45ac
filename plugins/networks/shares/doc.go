// Package shares owns each node's share of the l3 networks' subnets in a
// cluster: a subnet is cut into shares of the network's
// node-prefix-length (netconf.Network.NodePrefix), and each node claims
// one share per network, from which its IPAM hands out addresses.
//
// A share is held by a coordination.k8s.io Lease in the agent's namespace,
// one per share, named after the network and the share's index
// (LeaseName), held by the node's name (spec.holderIdentity) and owned by
// the node's Node object (an ownerReference), so the cluster's garbage
// collector deletes the Lease, and frees the share, when the Node is
// deleted. The Lease names the share's prefix (AnnotationShare) and
// carries the network's name and the share index as labels.
//
// Claim first looks for a share the node holds already, so an agent or
// node restart gets the same share; a Lease of the node whose prefix no
// longer matches networks.conf is deleted. Otherwise it creates the Lease
// of the first index no Lease names, and moves on to the next when the
// create conflicts (another node created it first). Claiming is
// wait-free: no lock, no retry of one index, at most one create per index;
// N nodes starting at once get N distinct shares. The Lease has no
// duration: a share is held until Release or the Node's deletion, not
// renewed.
//
// Watch reports the shares every node holds (Held: by network, each node's
// prefix), once listed and at each change, so that a node can route to the
// others' shares and drop the routes of a share freed.
//
// The package talks to the API server through client-go only; it knows
// nothing of networks.conf's file, pods or VPP.
package shares
