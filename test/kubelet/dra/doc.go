// Package dra tests the DRA driver memif.contivpp.io on a real single-node
// cluster (test/kubelet/kit/cluster: kube-apiserver, kube-scheduler,
// containerd 2.x with CDI, kubelet): the agent's device manager, event loop
// and driver run in the test process, publish the node's ResourceSlice and
// prepare the claims kubelet hands them; a testpmd on the host is the
// vswitch side. The slices' life through the agent's restarts, its DRA
// switch and its removal is shown both with that in-process agent and with
// the agent deployed as users do (kubectl apply -k k8s/dra/, the memifnode
// kit).
package dra
