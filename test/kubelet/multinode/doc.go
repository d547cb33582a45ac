// Package multinode holds the suites that need a cluster of several nodes
// (cluster.Options.Nodes, two here): one control plane, and on each node
// its own kubelet, containerd, mount and network namespace, cgroup root
// and agent, run by the chart's DaemonSet (memifnode.Deploy, then
// Node.JoinNodes opts the second node in).
//
// What it shows, as a user of the cluster sees it:
//   - the device plugin: with 2 memifs per node, four memif pods run two
//     per node and a fifth stays Pending with the scheduler's reason
//     (Insufficient contivpp.io/memif); one node's agent replaced leaves
//     the other node's allocations as they were, and its own as they were
//     after its restart; a memif freed lets the pending pod in;
//   - DRA: claims are allocated from both nodes' ResourceSlices, each from
//     the pool of the node its pod runs on, and a pod pinned to a node
//     (nodeSelector) gets its claim from that node's pool;
//   - node removal (cluster.Node.Remove: kubelet stopped, Node deleted):
//     its ResourceSlice, its pods and its agent go, and a pending pod is
//     weighed on the nodes left;
//   - networks that span nodes (crossNode, the nodes joined by an
//     underlay, each node's VPP on it): a VPP pod on one node pings a VPP
//     pod on the other in an l3 network (each node handing out its own
//     share of the subnet) and in an l2 network, and a pod of a third
//     network reaches neither;
//   - a spanning node's life, in order on one cluster: its agent replaced
//     sends neither node's VPP a change (VPP's API trace) and the traffic
//     across the nodes goes on; its VPP restarted gets its tunnels and
//     routes back and the traffic resumes; the node removed, the other
//     node's VPP drops its tunnels and routes to it and its shares'
//     Leases go with its Node.
//
// Its benchmarks, each beside a baseline in the same run: packets per
// second from a VPP pod to one on the other node, over the underlay's
// VXLAN, beside one on its own node (BenchmarkCrossNodePodToPod); and the
// time from a node opted in to the other node's VPP holding its tunnels
// and route, beside its agent's own time to Ready (BenchmarkPeerTunnelUp):
//
//	CI=true MEMIF_AGENT_BIN=/path/to/bin go test -count=1 -run '^$' -bench . -benchtime 5x ./multinode
//
// It needs root, the peers (make peers), the agent's image (make image,
// which Deploy runs) and memifctl (MEMIF_AGENT_BIN, or a build of this
// run). Run from test/kubelet:
//
//	CI=true MEMIF_AGENT_BIN=/path/to/bin go test -race -count=1 ./multinode
package multinode
