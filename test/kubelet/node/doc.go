// Package node is the suite that runs memif-agent as users do: on a real
// single-node cluster (kit/cluster: kubelet on containerd, API server,
// scheduler, controllers), installed with the Helm chart's defaults
// (deploy/helm/memif-agent, helm install), with pods
// that ask for contivpp.io/memif and pass packets to a DPDK testpmd memif
// server on the host. It asserts what a user sees through kubectl,
// memifctl and the pods' own environment.
//
// TestMultiMemifPodsAnnouncedOnce watches the agent reconcile running pods
// for five minutes (podmanager.conf reconcile-period 2s);
// MEMIF_NODE_RECONCILE_WATCH (a Go duration) shortens or lengthens it.
//
// It needs root and the peers of scripts/peers.sh (make peers); make
// test-e2e provides both. memifctl comes from MEMIF_AGENT_BIN (make build)
// or is built for the run.
package node
