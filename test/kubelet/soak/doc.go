// Package soak runs the agent for a long time under faults (TestSoak):
// the two-node cluster of the multinode suite (cluster.Options.Nodes),
// each node's VPP on an underlay, an l3 network (red, each node a share)
// and an l2 one (lab, stretched over VXLAN) spanning the nodes, the chart
// installed with the device plugin and the DRA driver.
//
// For SOAK_DURATION (make soak: 30m by default; unset, the test skips), memif
// pods come and go at SOAK_RATE pods a minute (default 20, at most
// SOAK_MAX_PODS alive, default 10): pairs of VPP pods, one on each node,
// that ping each other across the nodes (device plugin pods in red, in
// lab, with two memifs, and DRA claim pods in red), and a hostile pod that
// fills its /run/vpp with files. Meanwhile faults come one at a time, at
// random (seeded; the seed is printed, SOAK_SEED replays the choices):
// the agent killed (kill -9), the chart rolled (helm upgrade of a pod
// annotation), VPP killed and restarted, VPP stopped (SIGSTOP) past
// vswitch-health-grace, kubelet, containerd and the API server
// restarted, the added node removed and a new one added.
//
// Every few seconds and at the end it checks: no memif pod refused outside
// the windows the README documents (VPP unreachable); every memif pod
// wired and pinging its peer within a bound of settled time after its
// creation and after each fault; nothing left of a gone pod or a removed
// node (allocation, socket directory, CDI spec, address, VPP memif, share
// Lease, VXLAN tunnel, route), comparing memifctl, the socket root, the
// CDI directory, the agent's metrics, VPP and the API server with the
// pods, claims and nodes there are; no device held twice or by another pod than kubelet's; the agent's
// checkpoint consistent with kubelet's pod-resources; the agents' RSS and
// fds without an upward trend (the last third of the samples against the
// first). It prints a table of what happened (SOAK_TABLE=file writes it
// too) and fails on any violation.
//
// It needs root, the peers (make peers), the agent's image (make image,
// which Deploy runs) and memifctl (MEMIF_AGENT_BIN). From the repository
// root:
//
//	make soak                      # SOAK_DURATION=30m
//	make soak SOAK_DURATION=3m SOAK_SEED=42
package soak
