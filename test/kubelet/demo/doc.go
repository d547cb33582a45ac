// Package demo runs the whole memif chain on one machine with real peers
// and reports each step: kubelet's own device manager (in-process), a
// private Docker engine, the real memif-agent binary, and DPDK's testpmd on
// both ends of every memif.
//
// Run is the flow behind `make demo` and its end-to-end test:
//
//  1. kubelet admits Pods pods that request contivpp.io/memif; their
//     containers are created in Docker with the envs, mounts and
//     annotations kubelet handed back, under kubelet's labels;
//  2. for each pod, the vswitch side (testpmd memif server, standing in for
//     VPP) is started from what `memifctl get -o json` reports, then the
//     pod's container starts DPDK's memif client, which reads MEMIF_SOCKET
//     and MEMIF_SECRET from its environment;
//  3. every link comes up and packets flow; the result holds, per pod, the
//     host socket, link state, packets received and packets per second;
//  4. the first pod is deleted (vswitch side first, then its containers,
//     then kubelet forgets it); the agent releases its directory and
//     devices while the other links stay up;
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
