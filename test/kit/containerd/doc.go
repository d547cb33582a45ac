// Package containerd runs a private containerd for tests (own root, state
// and socket under a temporary directory, so the machine's containerd is
// left alone) and makes kubelet pods in it through the CRI, as kubelet
// does: a sandbox with kubelet's labels and metadata, app containers with
// the mounts and annotations the device manager returned.
//
// Two builds are known: Debian's containerd 1.6 (/usr/bin/containerd, from
// scripts/install-deps.sh) and containerd 2.x from the peers cache
// (scripts/peers.sh). Its CRI config restricts oom_score_adj (this kind of
// machine forbids negative values), runs pods in the host network (no CNI
// needed) and takes its sandbox image from test/kit/ociimage, imported at
// start: nothing is pulled.
//
// The package owns the daemon's process and directory; it stops the
// daemon and its pods' shims when the test ends.
package containerd
