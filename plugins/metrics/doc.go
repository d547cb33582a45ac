// Package metrics is the cn-infra plugin of the read-only metrics
// listener (plugins/metrics/listener): it reads metrics.conf (flag
// -metrics-config) and $MEMIF_AGENT_POD_IP in Init, failing the agent's
// start on a bad key or address, serves the agent's Prometheus registry
// (the one cn-infra's Prometheus plugin serves at /metrics on the loopback
// HTTP port) from AfterInit, and stops serving in Close. It logs the
// address it serves on and where that address came from.
//
//	metrics := metrics.NewPlugin(metrics.UseDeps(func(deps *metrics.Deps) {
//		deps.Cfg = forPlugin(metrics.PluginName)
//	}))
//
// It owns the listener only; the metrics are registered by the plugins
// that own what they measure.
package metrics
