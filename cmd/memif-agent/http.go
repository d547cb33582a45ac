package main

import (
	"net"

	"github.com/ligato/cn-infra/config"
	"github.com/ligato/cn-infra/rpc/rest"
	"github.com/ligato/vpp-agent/plugins/kvscheduler"
)

// loopbackHTTPHost is where the HTTP server (probes, metrics, event history,
// scheduler dumps) listens unless http.conf names another endpoint.
const loopbackHTTPHost = "127.0.0.1"

// agentDefaults wraps a framework plugin's configuration so that the
// agent's own defaults apply under whatever the plugin's config file sets.
type agentDefaults struct {
	config.PluginConfig
}

func withAgentDefaults(pluginConfig config.PluginConfig) config.PluginConfig {
	return agentDefaults{pluginConfig}
}

// LoadValue implements config.PluginConfig: it sets the agent's defaults on
// value, then lets the config file override them.
func (c agentDefaults) LoadValue(value interface{}) (found bool, err error) {
	switch pluginConfig := value.(type) {
	case *rest.Config:
		// cn-infra listens on 0.0.0.0; a node agent must not expose its
		// endpoints on the node's addresses unless the operator asks for it.
		// The port (from -http-port or the default) is kept.
		port := rest.DefaultHTTPPort
		if _, configuredPort, splitErr := net.SplitHostPort(pluginConfig.Endpoint); splitErr == nil && configuredPort != "" {
			port = configuredPort
		}
		pluginConfig.Endpoint = net.JoinHostPort(loopbackHTTPHost, port)
	case *kvscheduler.Config:
		// The transaction summary prints every value, memif secrets
		// included, to the log.
		pluginConfig.PrintTxnSummary = false
	}
	return c.PluginConfig.LoadValue(value)
}
