// Package dra tests the DRA driver memif.contivpp.io on a real single-node
// cluster (test/kubelet/kit/cluster: kube-apiserver, kube-scheduler,
// containerd 2.x with CDI, kubelet): the agent runs in the test process
// (internal/inprocess, the wiring cmd/memif-agent runs), its pod manager on
// the node's containerd and kubelet's pod-resources; its DRA driver
// publishes the node's ResourceSlice and prepares the claims kubelet hands
// it; a testpmd on the host is the
// vswitch side. The slices' life through the agent's restarts, its DRA
// switch and its removal is shown both with that in-process agent and with
// the agent deployed as users do (helm install of the chart with
// ci/dra-values.yaml, memifnode.Deploy).
package dra
