// Package crossnode tests the building blocks of memif networks that span
// nodes against a real control plane (cluster.Options.ControlPlaneOnly:
// etcd, kube-apiserver and kube-controller-manager with its garbage
// collector; the Node objects stand for nodes, created by the tests):
//   - IPAM shares (plugins/networks/shares): nodes claiming at once get
//     distinct shares and the last one finds the subnet exhausted; a
//     restarted claimer gets its share back, and a node registered again
//     under its name one its new Node owns; a changed share length
//     replaces the node's Lease; a deleted Node's share is freed by the
//     garbage collector and claimed by the next node; a watcher of the
//     Leases sees every node's shares, one released, and a deleted Node's
//     freed;
//   - underlay addresses (plugins/networks/underlay): each node publishes
//     its address as a Node annotation, and every watcher sees the others'
//     addresses, their changes and a Node deleted;
//   - the chart's admission policies (crossNode.enabled): with a token of
//     the agent's service account bound to its pod on a node, the agent
//     publishes its own Node's underlay address and claims and releases
//     its own share, and is refused another Node, any other change of its
//     own, and a Lease another node holds or owns.
//
// It needs root and the peers (make peers). Run from test/kubelet:
//
//	CI=true go test -race -count=1 ./crossnode
package crossnode
