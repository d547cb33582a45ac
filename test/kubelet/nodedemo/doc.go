// Package nodedemo is `make demo`: memif-agent on a real cluster (kit/cluster) next to the node's VPP, deployed and used as a
// user does, one printed line per step:
//
//  1. the cluster comes up (etcd, API server, controllers, scheduler,
//     containerd, kubelet) and the peers' versions are printed;
//  2. VPP (scripts/vpp.sh: memif and ping plugins, no DPDK, no hugepages)
//     starts on the node, in its mount namespace, with its API socket in
//     /run/vpp, and its version is printed;
//  3. the agent is installed with `helm install` of the chart
//     deploy/helm/memif-agent with its ci/vpp-values.yaml (VPP's socket
//     directory mounted, vswitch.conf naming the socket and
//     networks.conf's two networks: pods, l2 and the default, and red, l3
//     with 10.70.0.0/24), and its DaemonSet becomes Ready; the node's
//     allocatable shows contivpp.io/memif and the networks are printed;
//  4. l2: Pods pods ask for one memif each, naming no network (so in
//     pods), and run DPDK's testpmd as memif client, the first sending
//     (txonly), the others receiving (rxonly); for each, VPP holds the
//     memif master the agent created on the allocation's socket; what
//     `kubectl get pods` and `memifctl list` show is printed;
//  5. every link comes up in VPP, all memifs in pods' bridge domain; what
//     vppctl shows (show interface, show memif, show bridge-domain) is
//     printed, and a table gives VPP's counters of each memif and what each
//     pod's testpmd counted (its log), the receivers getting the sender's
//     packets through VPP;
//  6. l3: two pods run VPP as the memif slave (test/kit/vppcnf), naming red
//     in their memif.contivpp.io/networks annotation; each gets an address
//     of red and its gateway in /run/vpp/memif.json (printed), configures
//     its VPP from it, and pings its gateway (the node's VPP) and the other
//     pod through the node's VPP; vppctl shows the node's addresses and
//     red's VRF table;
//  7. the last testpmd pod is deleted: its memif and socket are gone from
//     VPP, its allocation and directory released, while the other links
//     stay up and packets still flow;
//  8. with Options.Nodes above 1 (demo --nodes 2), each added node runs
//     its own VPP (in its mount and network namespace) and the DaemonSet's
//     agent, and the networks span the nodes: every node's VPP joins the
//     cluster's underlay (memifnode.JoinUnderlay: a veth into a host
//     bridge, af_packet and VXLAN in VPP), the chart is installed with
//     crossNode on and crossnode.conf naming each node's underlay link
//     and address, and each agent publishes its address as a Node
//     annotation and claims its node's share of red as a Lease (printed);
//     the l2 and l3 pods above are pinned to the first node, a testpmd
//     pod pinned to each added node gets its memif from that node's
//     agent, held link up by that node's VPP, and a VPP pod of red on
//     each added node and the first l3 pod ping each other across the
//     nodes; vppctl shows each node's VXLAN tunnels, one per network to
//     each other node;
//  9. everything is torn down (VPP, then the cluster), also on Ctrl-C or a
//     failed step.
//
// The package owns VPP and the pods it starts; the cluster's own teardown
// removes the rest.
package nodedemo
