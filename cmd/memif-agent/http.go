package main

import (
	"net"

	"github.com/gorilla/mux"

	"github.com/ligato/cn-infra/config"
	"github.com/ligato/cn-infra/rpc/rest"
	access "github.com/ligato/cn-infra/rpc/rest/security/model/access-security"
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

// deferredHTTP is cn-infra's HTTP server with its start moved to the end of
// the agent's start (httpStarter). cn-infra's Prometheus and log-manager
// plugins add their routes in AfterInit, after the server's own AfterInit
// has started serving, and the router must not change while it serves: a
// probe during start-up raced those additions. Started last, the server
// serves a complete router, and its probes answer only once every plugin
// has started.
type deferredHTTP struct {
	server *rest.Plugin
}

var _ rest.HTTPHandlers = (*deferredHTTP)(nil)

// String implements infra.Plugin.
func (h *deferredHTTP) String() string { return h.server.String() }

// Init implements infra.Plugin.
func (h *deferredHTTP) Init() error { return h.server.Init() }

// Close implements infra.Plugin.
func (h *deferredHTTP) Close() error { return h.server.Close() }

// RegisterHTTPHandler implements rest.HTTPHandlers.
func (h *deferredHTTP) RegisterHTTPHandler(path string, provider rest.HandlerProvider, methods ...string) *mux.Route {
	return h.server.RegisterHTTPHandler(path, provider, methods...)
}

// RegisterPermissionGroup implements rest.HTTPHandlers.
func (h *deferredHTTP) RegisterPermissionGroup(groups ...*access.PermissionGroup) {
	h.server.RegisterPermissionGroup(groups...)
}

// GetPort implements rest.HTTPHandlers.
func (h *deferredHTTP) GetPort() int { return h.server.GetPort() }

// httpStarter starts the deferred HTTP server; it is the agent's last
// plugin, so its AfterInit runs after every other plugin's.
type httpStarter struct {
	http *deferredHTTP
}

// String implements infra.Plugin.
func (s *httpStarter) String() string { return "http-start" }

// Init implements infra.Plugin.
func (s *httpStarter) Init() error { return nil }

// AfterInit starts serving.
func (s *httpStarter) AfterInit() error { return s.http.server.AfterInit() }

// Close implements infra.Plugin; the server stops in deferredHTTP.Close.
func (s *httpStarter) Close() error { return nil }
