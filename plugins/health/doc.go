// Package health is the agent's status check: plugins report their state to
// it (statuscheck.PluginStatusWriter) and cn-infra's probe plugin reads the
// agent's state from it (statuscheck.StatusReader) for /readiness,
// /liveness and the service_health metric.
//
// It replaces cn-infra's statuscheck plugin for two reasons: statuscheck
// hands its internal status map to readers that encode it outside its lock
// (a data race with every state report), and it makes the agent's state
// whatever plugin reported last, so a plugin reporting OK hides another
// plugin's error. Here readers get copies, and the agent's state is the
// worst state of its plugins: ERROR if any plugin is in error, else INIT if
// any is still starting, else OK.
//
// It owns the reported states only; it publishes nothing to a datastore.
package health
