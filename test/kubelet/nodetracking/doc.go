// Package nodetracking tests pod tracking on a real node (the cluster kit:
// kube-apiserver, scheduler, kubelet v1.37 on containerd 2.x or Debian's
// containerd 1.6, no Docker) with the real memif-agent binary reading the
// node through the CRI and kubelet's pod-resources: a memif pod is bound
// once it runs and the node API answers for it, its deletion releases its
// directory and device, an agent restart keeps the binding, a deletion
// right after a containerd restart is not lost, and pods created and
// deleted in overlapping waves on a node of four devices (50 pods)
// are all admitted, bound and released.
package nodetracking
