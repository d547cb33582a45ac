package nodeapi

import (
	"context"
	"fmt"
	"sync"

	"github.com/ligato/cn-infra/infra"

	"github.com/contivpp/memif-agent/internal/configfile"
	"github.com/contivpp/memif-agent/internal/logs"
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
	// log is Log, structured; set in Init.
	log logs.Logger

	serverConfig server.Config
	service      *server.Service
	// serverMu guards server and handedOver: the node may be handed over
	// (HandOver) from another goroutine.
	serverMu   sync.Mutex
	server     *server.Server
	handedOver bool
}

// Init reads nodeapi.conf.
func (p *Plugin) Init() error {
	p.log = logs.FromPlugin(p.Log)
	if p.DeviceManager == nil {
		return fmt.Errorf("nodeapi plugin: DeviceManager dependency is not set")
	}
	cfg := DefaultConfig()
	if err := configfile.Load(p.Cfg.GetConfigName(), &cfg); err != nil {
		return fmt.Errorf("nodeapi plugin: %w", err)
	}
	p.serverConfig = cfg.serverConfig()
	p.service = server.NewService(p.DeviceManager, p.Controller, cfg.watchLimits())
	return nil
}

// AfterInit starts serving. The controller's loop has just started: a
// pod's lookup made before its startup resync has restored the device
// manager's checkpoint waits for the restore.
func (p *Plugin) AfterInit() error {
	p.serverMu.Lock()
	defer p.serverMu.Unlock()
	if p.handedOver {
		return nil
	}
	srv, err := server.Start(p.serverConfig, p.service)
	if err != nil {
		return fmt.Errorf("start node API: %w", err)
	}
	p.server = srv
	p.log.InfoS("node API listening", "socket", srv.SocketPath())
	return nil
}

// Close stops serving and removes the socket.
func (p *Plugin) Close() error {
	p.serverMu.Lock()
	defer p.serverMu.Unlock()
	if p.server == nil {
		return nil
	}
	srv := p.server
	p.server = nil
	return srv.Close()
}

// HandOver implements dmapi.HandoverParticipant: the API socket is the
// node's, and the replacing agent serves it from its start (this one's
// answers would be stale from now on).
func (p *Plugin) HandOver(context.Context, string) {
	p.serverMu.Lock()
	p.handedOver = true
	p.serverMu.Unlock()
	if err := p.Close(); err != nil {
		p.log.WarnS("node API close failed at the handover", "err", err)
	}
}

// SuccessorServing implements dmapi.HandoverParticipant.
func (p *Plugin) SuccessorServing() {}
