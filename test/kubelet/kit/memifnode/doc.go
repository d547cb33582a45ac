// Package memifnode deploys memif-agent on a cluster node (package
// cluster) the way a user does, and drives it as a user would: the agent
// image from `make image` (scripts/image.sh) and the memif-testpmd image
// (testpmd.PodImage) imported into the node, `kubectl apply -k k8s/` (or
// another kustomization, such as k8s/dra/ with the DRA driver on), pods
// that ask for contivpp.io/memif running DPDK's testpmd as memif client
// or VPP as memif slave (VPPPod, the image of test/kit/vppcnf imported by
// ImportVPPImage, its vppctl reached by PodVPP), and memifctl against the
// agent's node-local API.
//
// It owns the images it builds and the pods it creates; the cluster is the
// caller's.
//
// Example:
//
//	c := cluster.StartForTest(t, cluster.Options{})
//	n, err := memifnode.Deploy(ctx, c, memifnode.Options{BinDir: "../../../bin"}) // Kustomization: "k8s/vpp" for the VPP overlay
//	err = n.DaemonSetReady(ctx)                                     // nil once Ready (poll)
//	_, err = n.CreatePod(ctx, memifnode.MemifPodForwarding("default", "pod-a", "rxonly"))
//	link, err := n.PodLink(ctx, "default", "pod-a")                // its env, its allocation, host socket
//	stats, err := n.PodStats(ctx, "default", "pod-a")              // what its testpmd counted (kubectl logs)
//	sw, err := n.StartVswitch(ctx, link, logPath)                   // a host testpmd as the vswitch side
//	err = memifnode.ImportVPPImage(ctx, c)
//	_, err = n.CreatePod(ctx, memifnode.VPPPod("default", "cnf-a", `[{"network":"red","mode":"ip","queues":2}]`))
//	sent, received, err := memifnode.PodVPP(c, "default", "cnf-a").Ping(ctx, "10.70.0.1")
package memifnode
