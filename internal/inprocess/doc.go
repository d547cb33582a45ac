// Package inprocess runs the agent inside a test's process: the plugins
// agentwiring makes for cmd/memif-agent, wired the same way, started in
// the order cn-infra starts them and stopped in reverse. A test chooses
// each plugin's config (Options.Configs, by the names of
// agentwiring.PluginConfigs), the pod sources (kubelet's pod-resources,
// a container runtime, or the fake pod-resources API), and VPP (a socket
// in vswitch.conf) or KV descriptors that stand in for it; it reaches
// every plugin through Agent's fields. For the tests of one plugin's
// logic, a test's part goes beside or in place of one of the agent's
// (seams.go): a first event handler, the device manager's pod sources in
// place of the pod manager, a wrapper of the KV scheduler the vswitch
// registers VPP's descriptors with, the vswitch's log, the networks'
// span. The wiring stays agentwiring's.
//
// What it owns: the agent's directory (config files, state, sockets), the
// stand-ins it starts (kubelet's registration server, the pod-resources
// API) and the agent's metrics registry. It is for tests only; the agent
// must not import it.
package inprocess
