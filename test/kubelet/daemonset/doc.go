// Package daemonset runs the agent's DaemonSet pod spec
// (k8s/memif-agent.yaml, rendered from the Helm chart) with the agent
// image (make image) in a real Docker engine, against kubelet's real
// device manager, to show that the manifest's security context, host
// paths, config and probes are enough for the agent to work.
//
// The package holds only its test; it must not touch the host's kubelet,
// Docker or /var/run directories: kubelet's directory is a tmpfs in a
// private mount namespace, and every other host path of the manifest is
// mapped under a temporary directory.
package daemonset
