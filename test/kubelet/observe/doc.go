// Package observe is the suite of what an operator sees of the agent on a
// real single-node cluster (kit/cluster) with VPP as the node's vswitch:
// the metrics the cluster's Prometheus scrapes from the agent's read-only
// metrics listener, found through the chart's metrics Service, and the
// Kubernetes Events the agent posts on pods.
//
// Pods pass traffic through VPP (testpmd txonly into the l2 network pods,
// testpmd rxonly out of it), one takes an address of the l3 network red,
// one names a network the node does not have, and one presents a wrong
// memif secret. A pod on the host network running the agent's image
// (memif-agent scrape) scrapes every endpoint of the metrics Service, as
// Prometheus' Kubernetes service discovery does (the cluster has no
// kube-proxy, so no ClusterIP routes); the suite checks each memif's link
// state and VPP counters by pod, red's address use and the refusals by
// reason. It checks the Events on the pods: MemifWired with the interface,
// network and addresses, MemifNetworkRefused, MemifWrongSecret, and
// MemifLinkDown once the refused link is down past vswitch.conf's
// link-down-grace (5 s here).
//
// It needs root and the peers of scripts/peers.sh (make peers); make
// test-e2e provides both. memifctl comes from MEMIF_AGENT_BIN (make
// build) or is built for the run.
package observe
