// Package nodedemo is `make demo`: memif-agent on a real single-node
// cluster (kit/cluster), deployed and used as a user does, one printed
// line per step:
//
//  1. the cluster comes up (etcd, API server, controllers, scheduler,
//     containerd, kubelet) and the peers' versions are printed;
//  2. the agent is deployed with `kubectl apply -k k8s/` and its DaemonSet
//     becomes Ready; the node's allocatable shows contivpp.io/memif;
//  3. Pods pods ask for one memif each and run DPDK's testpmd as memif
//     client; what `kubectl get pods` and `memifctl list` show is printed;
//  4. for each pod a testpmd memif server on the host (the vswitch side,
//     standing in for VPP) takes the allocation's socket and secret, and a
//     table shows link state and packets per second;
//  5. the first pod is deleted and its directory and devices are released
//     while the other links stay up;
//  6. everything is torn down, also on Ctrl-C or a failed step.
//
// The package owns the pods and vswitch sides it starts; the cluster's
// own teardown removes the rest.
package nodedemo
