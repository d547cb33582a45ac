// Package cluster runs a real Kubernetes cluster on this
// machine, for the suites and the demo that must see what users run:
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd
// (2.x built by scripts/peers.sh, 1.7 with CDI on built by scripts/peers.sh
// containerd17, or Debian's 1.6) with Debian's runc and CNI plugins, and
// kubelet, whose node becomes Ready.
//
// Everything belongs to one work dir (Dir) and loopback ports picked free:
// TLS is made here (a CA, serving and client certificates, the service
// account key); containerd and kubelet run in a private mount namespace in
// which the node's fixed paths (/var/lib/kubelet with its device-plugin
// and pod-resources sockets, /var/log/pods, /run/containerd, /run/netns,
// /var/lib/cni, the agent's /run/contiv, /run/memif-agent and
// /var/lib/memif-agent, and VPP's /run/vpp) are fresh directories of the
// work dir; NodeArgv runs a program of the node (VPP) there. kubelet's
// pods live under a cgroup root of their own and on a bridge of their own
// with no address. So clusters of several test runs, and a kubelet on the
// host, do not meet. HostPath maps a node path to where this process sees
// it (a memif socket the agent made, for a host-side testpmd).
//
// Stop stops kubelet, kills what is left of the pods, stops containerd and
// its shims and the control plane, and removes the namespace, the cgroups,
// the bridge and the work dir; the last cluster of the machine to stop
// removes the mount points the clusters made on the host (while another
// cluster runs, removing one would unmount that cluster's node path). A SIGINT or
// SIGTERM to the process does the same, then exits. A process killed
// without Stop (go test's -timeout panic, SIGKILL) takes its peers along
// (Pdeathsig), and the next Start reaps what outlives it (containerd's
// shims, pods, cgroups, bridge, work dir). kubelet itself changes
// a few kernel settings at start (vm.overcommit_memory, kernel.panic,
// kernel.panic_on_oops), as on any node; those stay.
//
// Options.Nodes (or AddNode) adds nodes to the first: memif-node-2,
// memif-node-3..., each a kubelet and containerd of its own served by the
// same control plane, in a mount namespace, under a cgroup root (inside
// the first node's) and with node paths of its own, and in a network
// namespace of its own (nodes.go, netns.go): its address on a veth whose
// host end routes it, so the API server reaches its kubelet; its loopback
// its own, so host-network pods of two nodes (the agent's HTTP port) do
// not meet, with the API server's loopback port forwarded in. The first
// node stays on the host's network. NodeHost is what a suite reaches on
// any node (AllNodes); Node.DialContext connects from inside an added
// node. Stop stops the added nodes first.
//
// JoinUnderlay joins a node to the underlay between the nodes, for the
// networks that span them (underlay.go): a Linux bridge of the cluster's
// own on the host and a veth per node, the node's end (UnderlayLink, named
// per node, as the first node shares the host's network) in its network
// namespace, for the node's VPP to take with af_packet. Stop removes them.
//
// Options.ControlPlaneOnly runs the control plane alone (etcd,
// kube-apiserver, kube-controller-manager with its garbage collector,
// kube-scheduler), for suites that talk to the API server only and create
// the Node objects they need themselves.
//
// Facts of these machines it handles: a negative oom_score_adj is
// forbidden (containerd's CRI runs with restrict_oom_score_adj), and the
// cgroup hierarchy is v1 hybrid (kubelet with failCgroupV1 false and the
// cgroupfs driver).
//
// Use:
//
//	c := cluster.StartForTest(t, cluster.Options{})      // or cluster.Start(ctx, opts) and c.Stop()
//	client, err := c.Clientset()                          // cluster-admin client-go clientset
//	out, err := c.Kubectl(ctx, "apply", "-f", "k8s/memif-agent.yaml") // kubectl --kubeconfig c.Kubeconfig()
//	err = c.ImportImage(ctx, "_out/memif-agent-image.tar") // ctr -n k8s.io images import
//	err = c.ImportOCIImage(ctx, img)                      // an ociimage.Image, written and imported
//	out, err := c.Ctr(ctx, "tasks", "ls")                 // ctr in the node's mount namespace
//	err = c.RestartKubelet(ctx)                           // pods keep running
//	err = c.RestartContainerd(ctx)                        // containers keep running
//	err = c.RestartAPIServer(ctx)                         // same port, certificates and etcd
//	err = c.Nodes()[0].RestartContainerd(ctx)             // an added node's (RestartKubelet too)
//	sock := c.HostPath("/run/contiv/memif/<id>/memif.sock")
//	argv := c.NodeArgv("vpp", "-c", conf)                // a program of the node (its mount namespace)
//
// Pods need no registry: PauseImage is imported before kubelet starts, and
// other images come from ImportImage with imagePullPolicy Never or
// IfNotPresent. Options.Runtime = Containerd17 runs containerd 1.7 with
// enable_cdi (the oldest containerd that applies a DRA driver's CDI
// devices; kubelet v1.37 runs it without the CRI's RuntimeConfig, with a
// "CRI implementation should be updated" notice), DebianContainerd
// Debian's 1.6 (no CDI at all).
// The peers come from scripts/peers.sh (BuildPeers), which builds what is
// not cached; run `make peers` first on a fresh machine.
package cluster
