// Package helm is the suite of the agent's Helm chart
// (deploy/helm/memif-agent) on a real single-node cluster (kit/cluster),
// with the helm the peers cache builds from its Go module
// (scripts/peers.sh helm). It installs the chart as the README tells an
// operator (the DRA values, so that every object the chart can render is
// there), sees the agent Ready and a memif pod admitted, upgrades the
// release with a changed value and sees the agents roll to it, then
// uninstalls it and finds nothing of the chart left in the cluster.
//
// It needs root and the peers of scripts/peers.sh (make peers); make
// test-e2e provides both. memifctl comes from MEMIF_AGENT_BIN (make
// build) or is built for the run.
package helm
