// Package vpp runs a real FD.io VPP for tests: no DPDK, no hugepages, the
// memif plugin (and those the Plugins option names), its API socket
// (socksvr), CLI socket and stats socket in a fresh short temp directory,
// and a unique api-segment prefix, so that tests running at the same time
// on one machine never share a VPP.
//
// The VPP comes from scripts/vpp.sh (VPP_PREFIX, the cache keyed by commit
// and tarball checksum, or the tarballs in shared/vpp beside the clone).
// Under CI=true a test that cannot get one fails; otherwise Require skips
// it.
//
// The package owns the VPP processes it starts and their directories.
//
// Example:
//
//	v := vpp.Start(t)
//	pinger := vpp.Start(t, vpp.Plugins("ping")) // the ping CLI too
//	out := v.CLI(t, "show memif")
//	v.Restart(t)
//	v.Pause(t)  // SIGSTOP: a hung VPP, its sockets open and unanswered
//	v.Resume(t) // SIGCONT: it does what it was sent meanwhile
//
// Outside a test (make demo), on a cluster node, in its mount namespace:
//
//	v, err := vpp.Launch(prefix, c.HostPath("/run/vpp"), vpp.InNamespace(c.NodeArgv))
//	defer v.Stop()
package vpp
