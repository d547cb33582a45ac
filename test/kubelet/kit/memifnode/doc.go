// Package memifnode deploys memif-agent on a cluster node (package
// cluster) the way a user does, and drives it as a user would: the agent
// image from `make image` (scripts/image.sh) and the memif-testpmd image
// (testpmd.PodImage) imported into the node, `kubectl apply -k k8s/`, pods
// that ask for contivpp.io/memif running DPDK's testpmd as memif client,
// and memifctl against the agent's node-local API.
//
// It owns the images it builds and the pods it creates; the cluster is the
// caller's.
//
// Example:
//
//	c := cluster.StartForTest(t, cluster.Options{})
//	n, err := memifnode.Deploy(ctx, c, memifnode.Options{BinDir: "../../../bin"})
//	err = n.WaitDaemonSetReady(ctx)
//	pod, err := n.CreateMemifPod(ctx, "default", "pod-a")
//	link, err := n.Link(ctx, pod)     // its env, its allocation, host socket
//	sw, err := n.StartVswitch(ctx, link, logPath)
package memifnode
