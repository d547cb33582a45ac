package nodeapi

import (
	"fmt"

	"github.com/ligato/cn-infra/infra"

	"github.com/contivpp/memif-agent/plugins/controller/eventloop"
	devapi "github.com/contivpp/memif-agent/plugins/devicemanager/api"
	"github.com/contivpp/memif-agent/plugins/nodeapi/server"
)

// Deps are the plugin's dependencies.
type Deps struct {
	infra.PluginDeps
	// DeviceManager is read for allocations and watched for changes.
	DeviceManager devapi.DeviceManagerAPI
	// Controller gives the event history to GetEventHistory; nil answers
	// it UNAVAILABLE. It is read in Init, after the controller's own Init.
	Controller HistorySource
}

// HistorySource is what the plugin needs of the controller: its event
// loop's history (the controller plugin and *eventloop.Loop have it).
type HistorySource interface {
	History() *eventloop.History
}

// Plugin serves the node-local API from AfterInit until Close.
type Plugin struct {
	Deps

	config  Config
	service *server.Service
	server  *server.Server
}

// Init reads nodeapi.conf.
func (p *Plugin) Init() error {
	if p.DeviceManager == nil {
		return fmt.Errorf("nodeapi plugin: DeviceManager dependency is not set")
	}
	if _, err := p.Cfg.LoadValue(&p.config); err != nil {
		return fmt.Errorf("load nodeapi config %s: %w", p.Cfg.GetConfigName(), err)
	}
	if _, err := p.config.serverConfig(); err != nil {
		return err
	}
	var history server.EventHistory
	if p.Controller != nil {
		if loopHistory := p.Controller.History(); loopHistory != nil {
			history = LoopHistory(loopHistory)
		}
	}
	p.service = server.NewService(p.DeviceManager, history, p.config.WatchBuffer)
	return nil
}

// AfterInit starts serving, once the device manager has loaded its state.
func (p *Plugin) AfterInit() error {
	cfg, err := p.config.serverConfig()
	if err != nil {
		return err
	}
	srv, err := server.Start(cfg, p.service)
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
