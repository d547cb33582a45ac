// Package testpmd runs DPDK's testpmd as the two ends of a memif link, so
// that a memif the agent hands out is proven with real packets.
//
// The vswitch side (Vswitch) stands in for VPP: a testpmd process on the
// host, memif server (master) on the allocation's host socket with its
// secret, counting what it receives (rxonly). Its link state and counters
// are read from DPDK's telemetry socket, not scraped from its output; a
// read waits for its answer until its context's deadline, however long a
// loaded machine keeps DPDK's telemetry threads from a CPU.
//
// The pod side is the command line of a container (PodCommand): testpmd as
// memif client on $MEMIF_SOCKET with $MEMIF_SECRET, read from the
// container's environment as a pod would, sending 64-byte packets (txonly).
// PodRootfs and PodBinds make a container able to run it without a
// registry: an image holding only the directory skeleton, with the host's
// /usr bind-mounted read-only.
//
// Teardown order matters: stop the vswitch side first. testpmd's memif
// server can crash when its client goes away under traffic (seen here about
// once in six client kills), while a client whose server goes away just
// waits to reconnect and then stops cleanly.
//
// The package owns the testpmd processes it starts and their DPDK runtime
// directories; it must not touch the agent's state or Docker.
//
// Example:
//
//	sw, err := testpmd.StartVswitch(ctx, testpmd.VswitchConfig{
//		Socket: info.HostSocket, Secret: info.Secret, LogPath: "/tmp/vswitch.log"})
//	...
//	defer sw.Stop()
//	err = sw.WaitLinkUp(ctx)
//	stats, err := sw.WaitReceiving(ctx) // packets from the pod side
//	rate, err := sw.RxRate(ctx, time.Second) // for benchmarks
package testpmd
