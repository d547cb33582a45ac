// Package networks is the cn-infra plugin that owns networks.conf
// (-networks-config): the node's l3 and l2 networks and the default
// network, with memifwiring.conf's legacy keys applied (a bridge-domain
// there becomes the default l2 network; see netconf.WithLegacy).
//
// Init reads the file, which must be valid (a regular file: a FIFO or a
// device is refused naming it; a missing file declares no network:
// memifs are wired as memifwiring.conf says), and watches its directory
// from then on (package reload: a ConfigMap update swaps the mounted file
// through a link, and is seen). A file missing at the start is watched
// for too (where the agent would read it: configfile.Locator), and
// applied once written; a file removed later keeps the networks applied
// last, with a warning (a file without networks declares none). Each new valid version is pushed into the
// controller's event loop as a NetworksChanged event, so that the event
// handlers apply it on the loop: the memif wiring applies what
// netconf.Reconcile allows while pods use the networks, logs each change
// it refuses and names the pods in a metric, and applies it once they are
// gone. An invalid version is logged and the one before stays in force.
// Handlers read Networks at every resync too, so a version whose event
// could not be queued is applied by the next resync.
//
// The plugin is thin: its logic is in netconf and reload. It holds no
// state but the last valid version, and touches nothing of the vswitch,
// the pods or the addresses (package assign, in the memif wiring, holds
// those).
//
//	networksPlugin := networks.NewPlugin(networks.UseDeps(func(deps *networks.Deps) {
//		deps.Cfg = forPlugin(networks.PluginName)
//		deps.EventLoop = eventLoop
//		deps.Legacy = memifWiring.LegacyNetworks
//	}))
package networks
