package main

import (
	"net"

	"github.com/ligato/cn-infra/config"
	"github.com/ligato/cn-infra/rpc/rest"
)

// loopbackHTTPHost is where the HTTP server (probes, metrics, event history,
// scheduler dumps) listens unless http.conf names another endpoint.
const loopbackHTTPHost = "127.0.0.1"

// loopbackByDefault wraps the HTTP plugin's configuration. cn-infra's HTTP
// plugin listens on 0.0.0.0 unless its config file says otherwise; a node
// agent must not expose its endpoints on the node's addresses unless the
// operator asks for it, so without an http.conf the host becomes loopback
// (the port, from -http-port or the default, is kept).
type loopbackByDefault struct {
	config.PluginConfig
}

// LoadValue implements config.PluginConfig.
func (c loopbackByDefault) LoadValue(value interface{}) (found bool, err error) {
	found, err = c.PluginConfig.LoadValue(value)
	if err != nil || found {
		return found, err
	}
	if httpConfig, ok := value.(*rest.Config); ok {
		port := rest.DefaultHTTPPort
		if _, configuredPort, splitErr := net.SplitHostPort(httpConfig.Endpoint); splitErr == nil && configuredPort != "" {
			port = configuredPort
		}
		httpConfig.Endpoint = net.JoinHostPort(loopbackHTTPHost, port)
	}
	return false, nil
}
