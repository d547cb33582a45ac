// Package networks is the suite of the node's networks (networks.conf and
// the pods' memif.contivpp.io/networks annotation) on a real single-node
// cluster (kit/cluster: kubelet on containerd, API server, scheduler,
// controllers) with the real VPP as the node's vswitch. The agent is
// installed with helm from the chart deploy/helm/memif-agent with this
// suite's values.yaml (the DRA driver on, the node's VPP, and its own
// networks: the l2 default network pods, the l3 networks red, blue and
// tiny), as a user declares their networks.
//
// The pods run FD.io VPP as the memif slave configured from the
// /run/vpp/memif.json the agent writes (test/kit/vppcnf), or DPDK's
// testpmd. The suite asserts what a user sees: pings between pods and to
// their gateway, show memif on both sides, memif.json, the agent's log and
// metrics, and the binary API messages the node's VPP receives.
//
// It needs root, the peers of scripts/peers.sh (make peers) and VPP
// (scripts/vpp.sh); make test-e2e provides them. memifctl comes from
// MEMIF_AGENT_BIN (make build) or is built for the run.
package networks
