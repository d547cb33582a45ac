// Package memifnode deploys memif-agent on a cluster node (package
// cluster) the way a user does, and drives it as a user would: the agent
// image from `make image` (scripts/image.sh) and the memif-testpmd image
// (testpmd.PodImage) imported into the node, `helm install` of the chart
// deploy/helm/memif-agent with the helm of the peers cache (its defaults,
// or values files such as its ci/dra-values.yaml, the DRA driver on;
// Node.Helm upgrades, Node.Uninstall uninstalls), pods
// that ask for contivpp.io/memif running DPDK's testpmd as memif client
// or VPP as memif slave (VPPPod, the image of test/kit/vppcnf imported by
// ImportVPPImage, its vppctl reached by PodVPP; VPPClaimPod asks through a
// DRA claim), and memifctl against an agent's node-local API (Memifctl
// the first node's, MemifctlOn a named node's). The node's
// VPP (StartNodeVPP) runs in the node's mount namespace with its sockets
// in VPPRunDir, where the chart's vpp values give the agent its API socket;
// it reads show memif by socket, rx placement, and traces the API messages
// VPP receives (APIChanges: those that are not reads). A pod's memif.json
// is read from its allocation's directory (PodMemif), the agent's config
// files replaced in its ConfigMap (SetConfigFile), its metrics read on its
// loopback port (Metric). For networks that span nodes, JoinUnderlay
// joins every node to the cluster's underlay and gives crossnode.conf's
// keys for Options.ConfigKeys (each node's link and UnderlayAddress), the
// node VPPs run UnderlayPlugins, and ImportVPPImageOnAll imports the VPP
// pod image into every node. On a cluster of several nodes, JoinNodes
// opts the added nodes in with the images imported into each, so that
// the DaemonSet runs an agent on every node (DaemonSetReadyOnAll), and
// StartNodeVPPOn, PodMemifOn and the other ...On methods reach a named
// node. NewTokenPodOn and AgentClient (agenttoken.go) make a client with a
// token of the agent's service account bound to a pod on a node, so
// that the chart's admission policies see the requests as that node's
// agent's. AgentPIDOn finds a node's agent process (its container's task
// in the node's containerd), KillAgentOn kills it with SIGKILL as a crash
// would, and AgentRestartedOn waits for kubelet to have started it again.
//
// It owns the images it builds and the pods it creates; the cluster is the
// caller's.
//
// Example:
//
//	c := cluster.StartForTest(t, cluster.Options{})
//	n, err := memifnode.Deploy(ctx, c, memifnode.Options{BinDir: "../../../bin"}) // Values: []string{memifnode.ChartDir + "/ci/vpp-values.yaml"} for VPP
//	err = n.DaemonSetReady(ctx)                                     // nil once Ready (poll)
//	_, err = n.CreatePod(ctx, memifnode.MemifPodForwarding("default", "pod-a", "rxonly"))
//	link, err := n.PodLink(ctx, "default", "pod-a")                // its env, its allocation, host socket
//	stats, err := n.PodStats(ctx, "default", "pod-a")              // what its testpmd counted (kubectl logs)
//	sw, err := n.StartVswitch(ctx, link, logPath)                   // a host testpmd as the vswitch side
//	err = memifnode.ImportVPPImage(ctx, c)
//	_, err = n.CreatePod(ctx, memifnode.VPPPod("default", "cnf-a", `[{"network":"red","mode":"ip","queues":2}]`))
//	sent, received, err := memifnode.PodVPP(c, "default", "cnf-a").Ping(ctx, "10.70.0.1")
//	memif, err := n.PodMemif(ctx, "default", "cnf-a")               // memif.File.Interfaces[0].IPs
//	node, err := memifnode.StartNodeVPP(ctx, c, "ping")             // before Deploy; node.Stop() before the cluster's
//	err = node.TraceAPI(ctx); changes, received, err := node.APIChanges(ctx)
package memifnode
