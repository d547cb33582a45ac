// Package health is the agent's status check and its probes: plugins report
// their state to it (statuscheck.PluginStatusWriter), and it answers
// GET /readiness and GET /liveness.
//
//   - /readiness answers 200 when every plugin is OK, 503 otherwise (still
//     starting, or a plugin in error such as a failed healing resync), with
//     the agent's and each plugin's state and error as JSON. Readiness
//     means working: the device manager reports INIT until its device
//     plugin is registered with kubelet and a pod source answers, and ERROR
//     with the reason when either is lost.
//   - /liveness answers 200 while the agent answers at all. It does not
//     follow the plugins' states on purpose: an agent whose vswitch or
//     kubelet is failing is not fixed by a restart, and restarting it would
//     only make kubelet's Allocate calls fail while it starts again.
//
// kubelet asks them on the probe socket (health.conf's probe-socket,
// package probesocket), with an exec probe, memif-agent probe: a Unix
// socket only root may connect to, so that no local user can starve them
// by holding connections, as anyone can on the loopback HTTP port. The
// HTTP server answers them too, for monitoring; kubelet's probes must not
// depend on it. The socket is served from ServeProbes, which the agent
// calls once every plugin has started, until Close.
//
// It replaces cn-infra's statuscheck and probe plugins for three reasons: statuscheck
// hands its internal status map to readers that encode it outside its lock
// (a data race with every state report), and it makes the agent's state
// whatever plugin reported last, so a plugin reporting OK hides another
// plugin's error; and its probe fails liveness whenever readiness fails, so
// kubelet would restart an agent for an error a restart does not fix. Here
// readers get copies, and the agent's state is the worst state of its
// plugins: ERROR if any plugin is in error, else INIT if any is still
// starting, else OK.
//
// It owns the reported states and the probe socket; it publishes nothing
// to a datastore.
package health
