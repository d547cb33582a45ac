// Package vppcnf is the test kit for a CNF: FD.io VPP running inside a pod
// as the memif slave of the agent's memif, configured from the
// /run/vpp/memif.json the agent writes into the allocation's directory.
//
// Image makes the pod image without a registry, from the node's VPP
// runtime (scripts/vpp.sh): VPP's prefix at /vpp (bin/vpp, bin/vppctl,
// its libraries, the memif and ping plugins), the host libraries ldd names
// for them, and the static entrypoint /vppcnf (cmd/vppcnf), which waits
// for memif.json and its sockets, writes VPP's startup.conf and setup.cli
// (package cnfsetup) into /tmp/vpp and runs VPP in the foreground. The
// pod needs the capabilities in Capabilities and MEMIF_SECRET in its
// environment (the agent's device plugin and DRA driver put it there).
//
// CLI runs vppctl commands where a VPP runs, through an Exec: in a pod's
// container (kubectl exec) with PodCLI, or on this host with HostCLI (the
// node's VPP, a test's VPP). Ping and ShowMemif read what a test asserts.
//
// The package owns no process: the caller runs the entrypoint (a pod, or a
// process in a test) and VPP.
//
// Example, on a cluster node (test/kubelet's memifnode glue does this):
//
//	img, err := vppcnf.Image("docker.io/library/memif-vppcnf:dev")
//	err = c.ImportOCIImage(ctx, img)
//	// a pod running it, asking for a memif, with vppcnf.Capabilities
//	cli := vppcnf.PodCLI(func(ctx context.Context, argv ...string) (string, error) {
//		return n.Exec(ctx, namespace, pod, "vpp", argv...)
//	})
//	err = cli.Connected(ctx)                          // poll: every memif connected
//	sent, received, err := cli.Ping(ctx, "10.70.0.1") // 3 sent, 3 received
//	memifs, err := cli.ShowMemif(ctx)                 // memifs[0].QueuePairs() == 2
package vppcnf
