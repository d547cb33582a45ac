package nodeapi

import (
	"fmt"

	"github.com/ligato/cn-infra/infra"

	"github.com/contivpp/memif-agent/internal/configfile"
	controllerapi "github.com/contivpp/memif-agent/plugins/controller/api"
	dmapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
)

// Deps are the plugin's dependencies.
type Deps struct {
	infra.PluginDeps
	// DeviceManager is read for allocations and watched for changes.
	DeviceManager dmapi.DeviceManagerAPI
	// Controller gives the event history to GetEventHistory; nil answers
	// it UNAVAILABLE.
	Controller controllerapi.EventHistory
}

// Plugin serves the node-local API from AfterInit until Close.
type Plugin struct {
	Deps

	serverConfig server.Config
	service      *server.Service
	server       *server.Server
}

// Init reads nodeapi.conf.
func (p *Plugin) Init() error {
	if p.DeviceManager == nil {
		return fmt.Errorf("nodeapi plugin: DeviceManager dependency is not set")
	}
	cfg := DefaultConfig()
	if err := configfile.Load(p.Cfg.GetConfigName(), &cfg); err != nil {
		return fmt.Errorf("nodeapi plugin: %w", err)
	}
	p.serverConfig = cfg.serverConfig()
	p.service = server.NewService(p.DeviceManager, p.Controller, cfg.WatchBuffer)
	return nil
}

// AfterInit starts serving. The controller's loop has just started: a
// pod's lookup made before its startup resync has restored the device
// manager's checkpoint waits for the restore.
func (p *Plugin) AfterInit() error {
	srv, err := server.Start(p.serverConfig, p.service)
	if err != nil {
		return fmt.Errorf("start node API: %w", err)
	}
	p.server = srv
	p.Log.Infof("node API listening on %s", srv.SocketPath())
	return nil
}

// Close stops serving and removes the socket.
func (p *Plugin) Close() error {
	if p.server == nil {
		return nil
	}
	return p.server.Close()
}
