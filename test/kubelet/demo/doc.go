// Package demo runs the whole memif chain on one machine with real peers
// and reports each step: kubelet's own device manager (in-process), a
// private Docker engine, a real VPP (scripts/vpp.sh's, no DPDK, no
// hugepages) that the real memif-agent binary programs, and DPDK's testpmd
// in every pod.
//
// Run is the in-process flow that `make demo` ran before the real node
// (package nodedemo), kept as a fast end-to-end test:
//
//  1. kubelet admits Pods pods that request contivpp.io/memif; their
//     containers are created in Docker with the envs, mounts and
//     annotations kubelet handed back, under kubelet's labels;
//  2. for each pod, VPP holds the memif master the agent created on the
//     socket `memifctl get -o json` reports (all pods' memifs in one bridge
//     domain), then the pod's container starts DPDK's memif client, which
//     reads MEMIF_SOCKET and MEMIF_SECRET from its environment;
//  3. every link comes up in VPP and packets flow; the result holds, per
//     pod, the host socket, link state, and VPP's receive counter and
//     packets per second;
//  4. the first pod is deleted (its containers, then kubelet forgets it);
//     the agent deletes its VPP memif, then releases its directory and
//     devices, while the other links stay up;
//  5. everything Run started is stopped and removed, also when ctx ends
//     (Ctrl-C) or a step fails.
//
// kubelet's device manager serves registration at a fixed path under
// /var/lib/kubelet, so callers run in a private mount namespace with a
// tmpfs there (kubelettest.Main in tests, the demo command's re-exec).
//
// The package owns what it starts under its work directory; it must not
// touch the host's Docker, kubelet or /var/run/contiv.
package demo
