// Package promregistry adapts a registry of cn-infra's Prometheus plugin to
// prometheus.Registerer, so that a plugin hands its framework-free package
// a plain Registerer and the package's metrics are served with the agent's
// at /metrics.
//
// It is part of the framework edge: only plugins import it. It owns no
// registry and registers nothing itself.
package promregistry
