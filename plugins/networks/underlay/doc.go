// Package underlay owns how the nodes of a cluster learn each other's
// underlay address, the address of each node's VPP on the link between
// nodes that carries the VXLAN tunnels of networks spanning nodes.
//
// Each node publishes its own address (from its config) as an annotation
// of its Node object (Annotation, Publish), and Watch reports the other
// nodes' addresses (Peers) once the Nodes are listed and then at each
// change: a node that publishes, changes its address, or whose Node is
// deleted. A node without the annotation is not a peer (its agent has not
// published yet); one whose annotation is not an IP address, or names the
// address of another peer, is reported apart (Peers.Invalid) for the
// caller to tell the user, and left out of the peer set.
//
// The annotation stays when the agent stops, so a restarting agent changes
// nothing on the other nodes; it goes with the Node.
//
// The package talks to the API server through client-go only; it knows
// nothing of VPP or networks.conf.
package underlay
